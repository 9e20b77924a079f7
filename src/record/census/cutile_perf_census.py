"""A pytest plugin that `git cutile-perf` loads (`-p`) into every benchmark run: the census of what ran.

For each perf case, right after the test's benchmark harness has timed its function, the function is
called once more, untimed, and two things are recorded about that call:

- every cuTile launch (`cuda.tile.launch`): the kernel's Python name, the file that defines it (relative
  to pytest's root), the grid, the compiler hints it was launched with (an autotuner's pick, such as an
  occupancy, is drawn once per process), and the bytes, shapes and dtypes of the distinct arrays passed to it;
- the GPU time of every kernel that ran, by name (torch's profiler over CUPTI; a conftest may supply
  its own source through the `pytest_cutile_perf_device_times` hook, as the project's test fixture does).

The timed calls themselves are counted, not recorded: how often the harness called the function and how
often each cuTile kernel was launched with each grid and arguments meanwhile (`timed`), so that a launch
skipped, or given other arguments, only while timed shows (a wrapper can tell the harness's calls from the
census's). An argument's part of a launch's signature is its shape, dtype and strides for an array, its
value for a scalar; the stream is part of it too. Counting costs the host a dictionary update per launch,
which the harness's GPU sleep before each timed call hides (and CUPTI's timing does not see).

What the timed calls returned is checked too (`outputs`): the output of one call drawn at random (seeded,
the seed recorded) and of the last are kept, by reference (no GPU work while timed), and compared after
the harness returns with the census call's: bit for bit where two untimed calls agree bit for bit, else
within the harness's tolerance for the dtype. Before the harness starts, one untimed call's output is
overwritten with all-ones bytes (NaN in floating point), so that memory a later call leaves unwritten, or
an output kept from that call and returned again, does not read as a right answer.

The census is attached to the case as the JUnit property `cutile_perf_census` (JSON), beside TileGym's
`benchmark` property, so it travels in the same file the tool already keeps as evidence. Where the harness
is not found the census says so.
"""

import array
import dataclasses
import functools
import importlib.abc
import json
import math
import os
import random
import sys
import time
import types

import pytest

PROPERTY = "cutile_perf_census"
# the harness function TileGym's perf tests time their function with: `benchmark(fn, ...)` in
# tests/common.py (benchmark_framework calls it by its global name)
HARNESS = (os.environ.get("CUTILE_PERF_HARNESS") or "tests.common:benchmark").split(":")

# what of the harness its own import left (`_watch_harness`), before a module imported after it (the
# kernel's among them) could replace any of it: {(module, attribute): (value, its code, defaults)}
_harness_as_imported = None


def _names_used(module):
    """The global and attribute names the harness module's own functions use (nested code included)."""
    names = set()

    def walk(code):
        names.update(code.co_names)
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                walk(const)

    for value in vars(module).values():
        code = getattr(value, "__code__", None)
        if isinstance(code, types.CodeType) and getattr(value, "__module__", None) == module.__name__:
            walk(code)
    return names


def _as_now(value):
    return value, getattr(value, "__code__", None), getattr(value, "__defaults__", None), getattr(value, "__kwdefaults__", None)


def _watch_harness(module):
    """Notes the harness module's functions and classes, and of the modules it holds the attributes its
    functions use (`triton.testing.do_bench`, `torch.cuda.Event`), two modules deep: the number the harness
    reports is made by them."""
    global _harness_as_imported
    used = _names_used(module)
    watched = {}

    def of_module(owner, depth):
        for name in used & set(vars(owner)):
            value = vars(owner)[name]
            watched[(owner, name)] = _as_now(value)
            if isinstance(value, types.ModuleType) and depth < 2:
                of_module(value, depth + 1)

    for name, value in vars(module).items():
        if name.startswith("__"):
            continue
        if isinstance(value, types.ModuleType):
            of_module(value, 1)
        elif callable(value):
            watched[(module, name)] = _as_now(value)
    _harness_as_imported = watched


def _harness_replaced(test_file):
    """What of the harness was replaced since its import (a function, or its code or defaults), in words;
    None where all is as imported, or where the harness was imported before the census could watch it.
    The census's own wrapper of the harness function is no replacement, nor is code of the test's own file
    (`test_file`: a session perf file that runs a standalone benchmark makes its harness so), which a
    session's step cannot change."""

    def ours(function, value):
        if any(function is wrapper for wrapper in _wrappers):
            inner = function.__wrapped__
            return inner is value or ours(inner, value)
        return getattr(getattr(function, "__code__", None), "co_filename", None) == test_file

    for (owner, name), (value, code, defaults, kwdefaults) in (_harness_as_imported or {}).items():
        now = vars(owner).get(name)
        if now is not value and not ours(now, value):
            return f"{owner.__name__}.{name} was replaced after the harness was imported"
        as_imported = (code, defaults, kwdefaults)
        if any(a is not b for a, b in zip(_as_now(value)[1:], as_imported)) and not ours(value, None):
            return f"the code of {owner.__name__}.{name} was replaced after the harness was imported"
    return None


class _Watching(importlib.abc.Loader):
    """The harness module's loader, which notes what its import made as soon as the module's code ran."""

    def __init__(self, inner):
        self._inner = inner

    def create_module(self, spec):
        return self._inner.create_module(spec)

    def exec_module(self, module):
        self._inner.exec_module(module)
        _watch_harness(module)

    def __getattr__(self, name):
        return getattr(self._inner, name)


class _HarnessFinder(importlib.abc.MetaPathFinder):
    """Finds the harness module as the finders after it would, its loader wrapped by `_Watching`."""

    def find_spec(self, name, path=None, target=None):
        if name != HARNESS[0]:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Watching(spec.loader)
                return spec
        return None


_launches = None  # the list launches are recorded into while a census call runs, else None
_timed = None  # {(id(kernel), grid, signature): launches} while the harness times a case, else None
_timed_kernels = {}  # id(kernel) -> kernel, for the kernels counted in `_timed`
_wrappers = []  # the harness wrappers the census made
_launches_taken = []  # the census call's launches, as recorded
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


def _stream_of(stream):
    """A launch's stream as a word: `default` for none, else its handle (torch's `cuda_stream`, a
    `__cuda_stream__` protocol's, an integer), else its type."""
    if stream is None:
        return "default"
    for attribute in ("cuda_stream", "handle"):
        handle = getattr(stream, attribute, None)
        if isinstance(handle, int):
            return str(handle)
    protocol = getattr(stream, "__cuda_stream__", None)
    if callable(protocol):
        try:
            return str(int(protocol()[1]))
        except Exception:
            pass
    if isinstance(stream, int):
        return str(stream)
    return type(stream).__name__


def _argument(value):
    """One argument's part of a launch signature: `dtype[shape]/strides` for an array, the value of a
    scalar, the type of anything else."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return repr(value)
    shape = getattr(value, "shape", None)
    if shape is None and isinstance(value, array.array):
        return f"{_TYPECODES.get(value.typecode, value.typecode)}[{len(value)}]/1"
    if shape is not None:
        dtype = str(getattr(value, "dtype", "?")).replace("torch.", "")
        stride = getattr(value, "stride", None)
        strides = stride() if callable(stride) else getattr(value, "strides", ())
        return f"{dtype}[{','.join(str(int(e)) for e in shape)}]/{','.join(str(int(s)) for s in strides)}"
    return type(value).__name__


def _signature(stream, args):
    """What a launch was given, compactly: its stream, then each argument (`_argument`)."""
    return " ".join([f"stream={_stream_of(stream)}"] + [_argument(a) for a in args])


def _identity(kernel):
    """A cuTile kernel's Python name and the file that defines it (None where unknown)."""
    function = _function_of(kernel)
    name = getattr(function, "__name__", None) or type(kernel).__name__
    return name, getattr(getattr(function, "__code__", None), "co_filename", None)


def _recording(launch):
    @functools.wraps(launch)
    def recorded(stream, grid, kernel, args, *rest):
        if _timed is not None:
            grid_key = tuple(grid) if isinstance(grid, (tuple, list)) else (grid,)
            key = (id(kernel), grid_key, _signature(stream, args))
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
                    "signature": _signature(stream, args),
                    "bytes": sum(nbytes for nbytes, _ in arrays),
                    "arrays": [found for _, found in arrays],
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
    """Calls `fn` once, untimed, recording its cuTile launches and the GPU time of what ran; the census
    and what the call returned."""
    global _launches
    started = time.perf_counter()
    root = str(config.rootpath)
    _launches = []
    _seen_arrays.clear()
    returned = []

    def kept(fn=fn):
        returned.append(fn())
        return returned[-1]

    fn = kept
    try:
        times = config.hook.pytest_cutile_perf_device_times(fn=fn)
        source = "conftest"
        if times is None:
            try:
                times = _torch_device_times(fn)
                source = "torch.profiler"
            except Exception as why:  # no torch, no GPU: the launches alone
                fn()
                times, source = None, f"no GPU kernel times: {type(why).__name__}: {why}"
        launches = _launches
    finally:
        _launches = None
    global _launches_taken
    _launches_taken = launches
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
        if launch["signature"] not in entry.setdefault("signatures", []):
            entry["signatures"].append(launch["signature"])
    census = {
        "taken": True,
        "launches": list(kernels.values()),
        "bytes": sum(launch["bytes"] for launch in launches),
        "arrays": [found for launch in launches for found in launch["arrays"]],
        "device": None if times is None else [{"name": n, "us": round(us, 3)} for n, us in times],
        "device_source": source,
        "seconds": round(time.perf_counter() - started, 4),
    }
    return census, (returned[0] if returned else None)


def _relative(file, root):
    return os.path.relpath(file, root) if file and os.path.isabs(file) else file


def _timed_launches(counts, root):
    """The counted launches as `[{"kernel", "file", "grid", "signature", "count"}, ...]`."""
    found = []
    for (kernel_id, grid, signature), count in counts.items():
        name, file = _identity(_timed_kernels[kernel_id])
        grid = [int(g) for g in grid]
        found.append({"kernel": name, "file": _relative(file, root), "grid": grid, "signature": signature, "count": count})
    return found


def _leaves(value):
    """The tensors and numbers an output is made of, in order (tuples, lists, dicts and host arrays
    opened); `(path, leaf)` each."""
    if isinstance(value, (tuple, list)) and not all(isinstance(v, (int, float)) for v in value):
        for index, inner in enumerate(value):
            for path, leaf in _leaves(inner):
                yield f"[{index}]{path}", leaf
    elif isinstance(value, dict):
        for key in sorted(value, key=repr):
            for path, leaf in _leaves(value[key]):
                yield f"[{key!r}]{path}", leaf
    else:
        yield "", value


def _is_tensor(value):
    return hasattr(value, "untyped_storage") and hasattr(value, "dtype")


def _held_by(fn):
    """The identities of what `fn` holds (its closure's and defaults' values, one level into containers)
    and its tensors' memory: an output that is one of them is an input, not to be poisoned."""
    held = set()
    for value in _inputs(fn):
        held.add(id(value))
        if _is_tensor(value):
            held.add(("memory", value.untyped_storage().data_ptr()))
    return held


def _poison(output, held):
    """Overwrites an output's tensors and host number lists with all-ones bytes (NaN in floating point),
    those not in `held` (the function's inputs): what a later call leaves unwritten, or returns again, is
    then no right answer. Whether it overwrote any."""
    poisoned = False
    for _, leaf in _leaves(output):
        if id(leaf) in held or (_is_tensor(leaf) and ("memory", leaf.untyped_storage().data_ptr()) in held):
            continue
        if _is_tensor(leaf):
            try:
                leaf.untyped_storage().fill_(0xFF)
            except Exception:  # a storage that cannot be filled byte by byte: the elements
                leaf.detach().fill_(math.nan if leaf.is_floating_point() else -1)
            poisoned = True
        elif isinstance(leaf, list) and leaf:
            leaf[:] = [math.nan] * len(leaf)
            poisoned = True
        elif isinstance(leaf, array.array) and leaf.typecode in "fd" and len(leaf):
            leaf[:] = array.array(leaf.typecode, [math.nan] * len(leaf))
            poisoned = True
    return poisoned


def _snapshot(output):
    """A copy of an output that later calls cannot change (tensors cloned, containers copied)."""
    if _is_tensor(output):
        return output.detach().clone()
    if isinstance(output, (tuple, list)):
        return type(output)(_snapshot(v) for v in output) if isinstance(output, list) else tuple(_snapshot(v) for v in output)
    if isinstance(output, dict):
        return {k: _snapshot(v) for k, v in output.items()}
    if isinstance(output, array.array):
        return array.array(output.typecode, output)
    return output


# tolerances where the harness has none for a dtype (torch.testing's defaults; exact for integers)
_TOLERANCES = {"float64": (1e-7, 1e-7), "float32": (1.3e-6, 1e-5), "float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5)}


def _tolerance(dtype):
    """`(rtol, atol, source)` for comparing outputs of `dtype` (a torch dtype, or None for host numbers):
    the harness module's `get_dtype_tolerances` where it has one, else torch.testing's defaults."""
    name = str(dtype).replace("torch.", "") if dtype is not None else "float64"
    harness = sys.modules.get(HARNESS[0])
    lookup = getattr(harness, "get_dtype_tolerances", None)
    if lookup is not None and dtype is not None:
        try:
            found = lookup(dtype)
            return float(found["rtol"]), float(found["atol"]), f"{HARNESS[0]}:get_dtype_tolerances({name})"
        except Exception:
            pass
    rtol, atol = _TOLERANCES.get(name, (0.0, 0.0))
    return rtol, atol, f"defaults for {name}"


def _host_values(leaf):
    if isinstance(leaf, (list, tuple, array.array)):
        return [float(v) for v in leaf]
    if isinstance(leaf, (int, float)) and not isinstance(leaf, bool):
        return [float(leaf)]
    return None


def _tensor_difference(a, b, rtol, atol):
    """`(bit-identical, within tolerance, max |a - b|, differing elements)` of two tensors of one shape
    and dtype, chunked so that no temporary is larger than 2^24 elements."""
    import torch

    flat_a, flat_b = a.detach().reshape(-1), b.detach().reshape(-1)
    identical = torch.equal(flat_a.contiguous().view(torch.uint8), flat_b.contiguous().view(torch.uint8))
    if identical:
        return True, True, 0.0, 0
    within, worst, differing, step = True, 0.0, 0, 1 << 24
    for start in range(0, flat_a.numel(), step):
        x, y = flat_a[start : start + step], flat_b[start : start + step]
        if not (x.is_floating_point() or x.is_complex()):
            x, y = x.double(), y.double()
        close = torch.isclose(x, y, rtol=rtol, atol=atol, equal_nan=True)
        differing += int((~close).sum())
        within = within and bool(close.all())
        gap = (x.double() - y.double()).abs().nan_to_num(nan=math.inf)
        worst = max(worst, float(gap.max()))
    return False, within, worst, differing


def _difference(timed, census, deterministic):
    """How far a timed call's output is from the census call's: `{"equal", "max_abs", "differing",
    "why"}`; `equal` under the rule that applies (bit for bit where the function is deterministic, else
    within tolerance). Also the tolerance each leaf was held to."""
    ours, theirs = list(_leaves(timed)), list(_leaves(census))
    if [p for p, _ in ours] != [p for p, _ in theirs]:
        return {"equal": False, "why": f"another structure ({len(ours)} parts, the census's {len(theirs)})"}, None
    equal, worst, differing, elements, tolerance = True, 0.0, 0, 0, None
    for (path, a), (_, b) in zip(ours, theirs):
        if _is_tensor(a) and _is_tensor(b):
            if tuple(a.shape) != tuple(b.shape) or a.dtype != b.dtype:
                why = f"{path or 'the output'}: {a.dtype}{list(a.shape)}, the census's {b.dtype}{list(b.shape)}"
                return {"equal": False, "why": why}, tolerance
            rtol, atol, source = _tolerance(a.dtype)
            identical, within, gap, count = _tensor_difference(a, b, rtol, atol)
            elements += a.numel()
        else:
            x, y = _host_values(a), _host_values(b)
            if x is None or y is None or len(x) != len(y):
                same = repr(a) == repr(b)
                identical = within = same
                gap, count = (0.0, 0) if same else (math.inf, 1)
                rtol, atol, source = 0.0, 0.0, "exact"
            else:
                rtol, atol, source = _tolerance(None)
                bits = [repr(u) == repr(v) for u, v in zip(x, y)]
                close = [b_ or abs(u - v) <= atol + rtol * abs(v) for b_, u, v in zip(bits, x, y)]
                identical, within = all(bits), all(close)
                gaps = [abs(u - v) if u == u and v == v else (0.0 if b_ else math.inf) for b_, u, v in zip(bits, x, y)]
                gap, count = max(gaps, default=0.0), sum(1 for c in close if not c)
            elements += len(x) if x is not None else 1
        tolerance = tolerance or {"rtol": rtol, "atol": atol, "source": source}
        equal = equal and (identical if deterministic else within)
        worst, differing = max(worst, gap), differing + count
    found = {"equal": equal, "max_abs": worst if math.isfinite(worst) else None, "differing": differing}
    return dict(found, elements=elements), tolerance


# the kept timed calls' outputs, in the order they are compared (the first that differs is the one named)
KEPT = ("fresh", "drawn", "last")


def _check_outputs(kept, census_output, again, seed):
    """The timed calls' kept outputs against the census call's; `again` is a second untimed call's output
    (the same bits: the function is deterministic)."""
    deterministic = _difference(again, census_output, True)[0]["equal"]
    compared, tolerance = [], None
    for name, (call, output) in sorted(kept.items(), key=lambda item: KEPT.index(item[0])):
        found, tolerance = _difference(output, census_output, deterministic)
        compared.append(dict(found, call=call, kept=name))
    return {
        "seed": seed,
        "deterministic": deterministic,
        "applied": "bit-identical" if deterministic else "tolerance",
        "tolerance": tolerance,
        "compared": compared,
    }


def _synchronize():
    torch = sys.modules.get("torch")
    try:
        torch.cuda.synchronize()
    except Exception:  # no torch, no GPU
        pass


def _harness_settings(harness, args, kwargs):
    """The harness call's settings: its parameters that have a default, as the call gave them or the
    default filled in (TileGym's defaults come from its environment: `CUPTI`, `CUDAGRAPH`, `WARMUP`,
    `REP`, ...), those of plain values."""
    import inspect

    try:
        signature = inspect.signature(harness)
        bound = signature.bind(None, *args, **kwargs)
    except (TypeError, ValueError):
        return None
    bound.apply_defaults()
    plain = (bool, int, float, str, type(None))
    return {
        name: value
        for name, value in bound.arguments.items()
        if signature.parameters[name].default is not inspect.Parameter.empty and isinstance(value, plain)
    }


# the timed calls among which the one given fresh input values is drawn (from 1): not the first, which a
# wrapper can tell from the others as the one after an untimed call
FRESH_FROM, FRESH_TO = 2, 6


def _inputs(fn):
    """What `fn` holds (its closure's and defaults' values, a `functools.partial`'s arguments, one level
    into lists and tuples)."""
    values = [cell.cell_contents for cell in (getattr(fn, "__closure__", None) or ()) if cell.cell_contents is not None]
    values += list(getattr(fn, "__defaults__", None) or ())
    if isinstance(fn, functools.partial):
        values += list(fn.args) + list(fn.keywords.values())
    return values + [v for value in values if isinstance(value, (list, tuple)) for v in value]


def _refresh(fn, draw):
    """Writes new values into `fn`'s floating-point inputs in place (same memory, shape and strides): each
    input's own values, rotated by a drawn offset, so that they are values the function accepts but in
    places no call saw them. Whether any input changed."""
    changed = False
    for value in _inputs(fn):
        try:
            if _is_tensor(value) and value.is_floating_point() and value.is_contiguous() and value.numel() > 1:
                flat = value.detach().view(-1)
                flat.copy_(flat.roll(draw.randrange(1, flat.numel())))
                changed = True
            elif isinstance(value, array.array) and value.typecode in "fd" and len(value) > 1:
                shift = draw.randrange(1, len(value))
                value[:] = value[shift:] + value[:shift]
                changed = True
        except Exception:  # an input that cannot be written (out of memory for the copy): left as it was
            continue
    return changed


def _is_scalar_part(part):
    try:
        float(part)
        return True
    except ValueError:
        return part in ("True", "False", "None")


def _varying_scalars(first, second):
    """The scalar arguments two untimed calls gave a kernel differently (a random offset advanced per
    call): `{(kernel, file): {part index}}`, the index in a signature's words (0 the stream)."""
    varying = {}
    if len(first) != len(second):
        return varying
    for a, b in zip(first, second):
        ours, theirs = a["signature"].split(" "), b["signature"].split(" ")
        if a["kernel"] != b["kernel"] or len(ours) != len(theirs):
            continue
        for index, (x, y) in enumerate(zip(ours, theirs)):
            if index and x != y and _is_scalar_part(x) and _is_scalar_part(y):
                varying.setdefault((a["kernel"], a["file"]), set()).add(index)
    return varying


def _held_signature(signature, indices):
    parts = signature.split(" ")
    return " ".join("*" if index in indices else part for index, part in enumerate(parts))


def _hold_agreed_scalars(census, varying):
    """Masks (`*`) the scalars the census's two untimed calls did not agree on, in its own signatures and
    the timed calls': shapes, dtypes, strides and the stream are held always, scalars where those calls
    agree."""
    for (kernel, file), indices in varying.items():
        root_file = None
        for launch in census.get("launches", []):
            if launch["kernel"] == kernel:
                root_file = launch["file"]
                held = []
                for signature in launch.get("signatures", []):
                    masked = _held_signature(signature, indices)
                    if masked not in held:
                        held.append(masked)
                launch["signatures"] = held
        for launch in census["timed"]["launches"]:
            if launch["kernel"] == kernel and launch["file"] == root_file:
                launch["signature"] = _held_signature(launch["signature"], indices)
        census.setdefault("varying", []).append({"kernel": kernel, "arguments": sorted(indices)})



def _after_harness(item, fn, kept, seed):
    """The census call, and the timed calls' kept outputs (`kept`: `{"drawn": (call, output), "last":
    ...}`) checked against its output."""
    _synchronize()
    started = time.perf_counter()
    # before the census call, which may write into the same memory
    snapshots = {name: (call, _snapshot(output)) for name, (call, output) in kept.items()}
    kept.clear()
    global _launches
    try:
        census, output = _take_census(item.config, fn)
    except Exception as why:
        return {"taken": False, "why": f"the census call failed: {type(why).__name__}: {why}"}, {}
    first, varying = _launches_taken, {}
    try:
        _launches = []
        _seen_arrays.clear()
        try:
            again = fn()
        finally:
            second, _launches = _launches, None
        _synchronize()
        census["outputs"] = _check_outputs(snapshots, output, again, seed)
        varying = _varying_scalars(first, second)
    except Exception as why:
        census["outputs"] = {"seed": seed, "why": f"the outputs could not be compared: {type(why).__name__}: {why}"}
    census["outputs"]["seconds"] = round(time.perf_counter() - started - census["seconds"], 4)
    return census, varying


def _census_harness(harness):
    @functools.wraps(harness)
    def with_census(fn, *args, **kwargs):
        global _census, _timed
        item = _current_item
        counting = item is not None and _census is None
        calls = [0]
        seed = int.from_bytes(os.urandom(4), "little")
        draw = random.Random(seed)
        kept = {}  # "fresh", "drawn" (reservoir sampling) and "last": (call number, output)
        # the timed call given input values no call saw before it: one of the first few, so that nearly
        # every harness reaches it; the calls from it on compute on those values, as the census's will
        fresh_at, since = draw.randint(FRESH_FROM, FRESH_TO), [1]

        @functools.wraps(fn)
        def counted(*fn_args, **fn_kwargs):
            calls[0] += 1
            if counting and calls[0] == fresh_at and _refresh(fn, draw):
                since[0] = fresh_at
            output = fn(*fn_args, **fn_kwargs)
            if calls[0] == since[0] > 1:
                kept["fresh"] = (calls[0], output)
            # each of n calls (since the fresh values) is the drawn one with probability 1/n, whatever n
            # turns out to be
            if draw.random() * (calls[0] - since[0] + 1) < 1.0:
                kept["drawn"] = (calls[0], output)
            kept["last"] = (calls[0], output)
            return output

        poisoned, poisoning = False, time.perf_counter()
        if counting:
            try:
                poisoned = _poison(fn(), _held_by(fn))
            except Exception:
                pass
            _synchronize()
            _timed = {}
            _timed_kernels.clear()
        poisoning = time.perf_counter() - poisoning
        try:
            timed = harness(counted if counting else fn, *args, **kwargs)
        finally:
            counts, _timed = _timed, None
        # after the timed repetitions, so that the census sees the call as they saw it last (a cache
        # warmed by them included), and they are not disturbed
        if counting:
            replaced = _harness_replaced(str(item.path))
            _census, varying = _after_harness(item, fn, kept, seed)
            _census["timed"] = {"calls": calls[0], "launches": _timed_launches(counts, str(item.config.rootpath))}
            _census["timed"]["fresh_inputs"] = since[0] if since[0] > 1 else None
            _hold_agreed_scalars(_census, varying)
            _census["wraps"] = ":".join(HARNESS)
            if replaced is not None:
                _census["replaced"] = replaced
            if "outputs" in _census:
                _census["outputs"]["poisoned"] = poisoned
                _census["outputs"]["seconds"] = round(_census["outputs"]["seconds"] + poisoning, 4)
            _census["harness"] = _harness_settings(harness, args, kwargs)
        return timed

    with_census.cutile_perf_census = True
    _wrappers.append(with_census)
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


# before the test modules are imported, so that `ct.launch` is the recording one wherever it is looked up,
# and what the harness's import makes is noted before anything imported after it runs
_install_launch_recorder()
if HARNESS[0] in sys.modules:
    _watch_harness(sys.modules[HARNESS[0]])
else:
    sys.meta_path.insert(0, _HarnessFinder())
