"""A pytest plugin that `git cutile-perf` loads (`-p`) into every benchmark run: the census of what ran.

For each perf case, right after the test's benchmark harness has timed its function, the function is
called once more, untimed, and two things are recorded about that call:

- every cuTile launch (`cuda.tile.launch`): the kernel's Python name, the file that defines it (relative
  to pytest's root), the grid, the compiler hints it was launched with (an autotuner's pick, such as an
  occupancy, is drawn once per process), and the bytes, shapes and dtypes of the distinct arrays passed to it;
- the GPU time of every kernel that ran, by name (torch's profiler over CUPTI; a conftest may supply
  its own source through the `pytest_cutile_perf_device_times` hook, as the project's test fixture does).

The timed calls themselves are counted, not recorded: how often the harness called the function and how
often each cuTile kernel was launched with each grid meanwhile (`timed`), so that a launch skipped only
while timed shows (a wrapper can tell the harness's calls from the census's). Counting costs the host a
dictionary update per launch, which the harness's GPU sleep before each timed call hides.

The census is attached to the case as the JUnit property `cutile_perf_census` (JSON), beside TileGym's
`benchmark` property, so it travels in the same file the tool already keeps as evidence. Where the harness
is not found the census says so.
"""

import dataclasses
import functools
import json
import os
import sys
import time

import pytest

PROPERTY = "cutile_perf_census"
# the harness function TileGym's perf tests time their function with: `benchmark(fn, ...)` in
# tests/common.py (benchmark_framework calls it by its global name)
HARNESS = (os.environ.get("CUTILE_PERF_HARNESS") or "tests.common:benchmark").split(":")

_launches = None  # the list launches are recorded into while a census call runs, else None
_timed = None  # {(id(kernel), grid): launches} while the harness times a case, else None
_timed_kernels = {}  # id(kernel) -> kernel, for the kernels counted in `_timed`
_seen_arrays = set()  # the arrays counted in this census call's bytes (an array is counted once)
_census = None  # the current case's census, filled by the harness wrapper


class _Hooks:
    @staticmethod
    @pytest.hookspec(firstresult=True)
    def pytest_cutile_perf_device_times(fn):
        """Call `fn` once and return `[(kernel_name, microseconds), ...]` for the GPU work it did, or None
        to let the plugin use torch's profiler."""


def pytest_addhooks(pluginmanager):
    pluginmanager.add_hookspecs(_Hooks)


def _function_of(kernel):
    """The Python function behind a cuTile kernel object (or a stand-in that is the function)."""
    for attribute in ("_pyfunc", "__wrapped__", "func"):
        inner = getattr(kernel, attribute, None)
        if inner is not None and hasattr(inner, "__code__"):
            return inner
    return kernel if hasattr(kernel, "__code__") else None


def _hints_of(kernel):
    """The compiler hints a cuTile kernel object carries (`occupancy`, `num_ctas`, ...), those set only;
    None for a kernel without them (a stand-in)."""
    options = getattr(kernel, "_compiler_options", None)
    try:
        fields = dataclasses.asdict(options)
    except TypeError:
        return None
    # a per-target value (`ByTarget`) is no JSON number: its repr says what it holds
    return {
        name: value if isinstance(value, (int, float, str)) else repr(value)
        for name, value in fields.items()
        if value is not None
    }


# array.array's type codes for the dtypes torch would name (the project's test fixture passes these)
_TYPECODES = {"d": "float64", "f": "float32", "q": "int64", "i": "int32", "h": "int16", "b": "int8"}


def _new_array(value, seen):
    """`(bytes, {"shape", "dtype"})` of an array argument not counted yet (by its data pointer, else its
    identity); None for anything else, or an array already counted."""
    nbytes = getattr(value, "nbytes", None)
    if nbytes is None and hasattr(value, "itemsize") and hasattr(value, "__len__"):
        nbytes = value.itemsize * len(value)
    if not isinstance(nbytes, int):
        return None
    try:
        key = value.data_ptr()
    except Exception:
        key = id(value)
    if key in seen:
        return None
    seen.add(key)
    shape = getattr(value, "shape", None)
    shape = [int(extent) for extent in shape] if shape is not None else [len(value)]
    dtype = getattr(value, "dtype", None)
    dtype = str(dtype).replace("torch.", "") if dtype is not None else _TYPECODES.get(getattr(value, "typecode", ""), "unknown")
    return nbytes, {"shape": shape, "dtype": dtype}


def _identity(kernel):
    """A cuTile kernel's Python name and the file that defines it (None where unknown)."""
    function = _function_of(kernel)
    name = getattr(function, "__name__", None) or type(kernel).__name__
    return name, getattr(getattr(function, "__code__", None), "co_filename", None)


def _recording(launch):
    @functools.wraps(launch)
    def recorded(stream, grid, kernel, args, *rest):
        if _timed is not None:
            key = (id(kernel), tuple(grid) if isinstance(grid, (tuple, list)) else (grid,))
            _timed[key] = _timed.get(key, 0) + 1
            _timed_kernels[key[0]] = kernel
        if _launches is not None:
            name, file = _identity(kernel)
            arrays = [found for found in (_new_array(a, _seen_arrays) for a in args) if found]
            _launches.append(
                {
                    "kernel": name,
                    "file": file,
                    "grid": [int(g) for g in grid] if isinstance(grid, (tuple, list)) else [int(grid)],
                    "hints": _hints_of(kernel),
                    "bytes": sum(nbytes for nbytes, _ in arrays),
                    "arrays": [array for _, array in arrays],
                }
            )
        return launch(stream, grid, kernel, args, *rest)

    recorded.cutile_perf_census = True
    return recorded


def _install_launch_recorder():
    try:
        import cuda.tile as ct
    except Exception:
        return
    launch = getattr(ct, "launch", None)
    if launch is not None and not getattr(launch, "cutile_perf_census", False):
        ct.launch = _recording(launch)


def _torch_device_times(fn):
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    times = {}
    for event in prof.events():
        if str(getattr(event, "device_type", "")).endswith("CUDA"):
            times[event.name] = times.get(event.name, 0.0) + event.time_range.elapsed_us()
    return sorted(times.items())


def _take_census(config, fn):
    """Calls `fn` once, untimed, recording its cuTile launches and the GPU time of what ran."""
    global _launches
    started = time.perf_counter()
    root = str(config.rootpath)
    _launches = []
    _seen_arrays.clear()
    try:
        times = config.hook.pytest_cutile_perf_device_times(fn=fn)
        source = "conftest"
        if times is None:
            try:
                times = _torch_device_times(fn)
                source = "torch.profiler"
            except Exception as why:  # no torch, no GPU: the launches alone
                fn()
                times, source = None, f"no device times: {type(why).__name__}: {why}"
        launches = _launches
    finally:
        _launches = None
    kernels = {}
    for launch in launches:
        file = _relative(launch["file"], root)
        entry = kernels.setdefault(
            (launch["kernel"], file), {"kernel": launch["kernel"], "file": file, "grids": [], "count": 0}
        )
        entry["count"] += 1
        if launch["grid"] not in entry["grids"]:
            entry["grids"].append(launch["grid"])
        if launch["hints"] and launch["hints"] not in entry.setdefault("hints", []):
            entry["hints"].append(launch["hints"])
    return {
        "taken": True,
        "launches": list(kernels.values()),
        "bytes": sum(launch["bytes"] for launch in launches),
        "arrays": [array for launch in launches for array in launch["arrays"]],
        "device": None if times is None else [{"name": n, "us": round(us, 3)} for n, us in times],
        "device_source": source,
        "seconds": round(time.perf_counter() - started, 4),
    }


def _relative(file, root):
    return os.path.relpath(file, root) if file and os.path.isabs(file) else file


def _timed_launches(counts, root):
    """The counted launches as `[{"kernel", "file", "grid", "count"}, ...]`."""
    found = []
    for (kernel_id, grid), count in counts.items():
        name, file = _identity(_timed_kernels[kernel_id])
        found.append({"kernel": name, "file": _relative(file, root), "grid": [int(g) for g in grid], "count": count})
    return found


def _census_harness(harness):
    @functools.wraps(harness)
    def with_census(fn, *args, **kwargs):
        global _census, _timed
        item = _current_item
        counting = item is not None and _census is None
        calls = [0]

        @functools.wraps(fn)
        def counted(*fn_args, **fn_kwargs):
            calls[0] += 1
            return fn(*fn_args, **fn_kwargs)

        if counting:
            _timed = {}
            _timed_kernels.clear()
        try:
            timed = harness(counted if counting else fn, *args, **kwargs)
        finally:
            counts, _timed = _timed, None
        # after the timed repetitions, so that the census sees the call as they saw it last (a cache
        # warmed by them included), and they are not disturbed
        if counting:
            try:
                _census = _take_census(item.config, fn)
            except Exception as why:
                _census = {"taken": False, "why": f"the census call failed: {type(why).__name__}: {why}"}
            _census["timed"] = {"calls": calls[0], "launches": _timed_launches(counts, str(item.config.rootpath))}
        return timed

    with_census.cutile_perf_census = True
    return with_census


def _install_harness_wrapper():
    module_name, function_name = HARNESS
    module = sys.modules.get(module_name)
    harness = getattr(module, function_name, None) if module is not None else None
    if harness is None or getattr(harness, "cutile_perf_census", False):
        return harness is not None
    setattr(module, function_name, _census_harness(harness))
    return True


_current_item = None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    global _current_item, _census
    found = _install_harness_wrapper()
    _current_item, _census = item, None
    try:
        yield
    finally:
        census = _census
        if census is None:
            why = "the test did not call its harness" if found else f"no harness {':'.join(HARNESS)}"
            census = {"taken": False, "why": why}
        item.user_properties.append((PROPERTY, json.dumps(census, sort_keys=True)))
        _current_item, _census = None, None


# before the test modules are imported, so that `ct.launch` is the recording one wherever it is looked up
_install_launch_recorder()
