"""git-cutile-perf's pytest plugin for a scaffolded session perf file.

`--cutile-perf-calls-of=MODULE:FUNCTION --cutile-perf-calls-to=FILE`: records every call of the kernel's
registered op that the tests make, one JSON line each: its positional and keyword arguments, a tensor as its
shape, dtype and device, a number, string or None as its value, a list or tuple item by item, anything else
as its type's name. The op is wrapped where the tests can reach it: its module's attribute (a test that
imports it by name, at collection, after this) and any registry of implementations that holds it (TileGym's
dispatcher calls the function it registered).

`--cutile-perf-growth-to=FILE --cutile-perf-growth-ms=MS`: writes each perf case's `growth` parameter and its
forward time (ms) as the harness recorded it, one `growth ms` line each; the cases run in growing order, and
those past four times the first growth at or over MS, or past a case that failed (out of memory), are skipped.
"""

import functools
import importlib
import json
import math
import sys

import pytest

# a list or tuple longer than this is not written item by item
_MOST_ITEMS = 64

_calls = []
_growth = {"reached": None, "failed": False, "current": None, "target": None, "threshold": 0.010}


def pytest_addoption(parser):
    group = parser.getgroup("cutile-perf")
    group.addoption("--cutile-perf-calls-of", default=None, help="MODULE:FUNCTION whose calls to record")
    group.addoption("--cutile-perf-calls-to", default=None, help="the file the recorded calls go to")
    group.addoption("--cutile-perf-growth-to", default=None, help="the file each perf case's time goes to")
    group.addoption("--cutile-perf-growth-ms", default="0.010", help="the time a grown case must reach")


def _describe(value):
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if shape is not None and dtype is not None and not isinstance(value, type):
        try:
            dims = [int(extent) for extent in shape]
        except (TypeError, ValueError):
            return {"kind": "other", "type": type(value).__name__}
        return {"kind": "tensor", "shape": dims, "dtype": str(dtype), "device": str(getattr(value, "device", ""))}
    if isinstance(value, float) and not math.isfinite(value):
        return {"kind": "other", "type": f"float {value}"}
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"kind": "value", "value": value}
    if type(value).__name__ == "dtype" and str(value).startswith("torch."):
        return {"kind": "dtype", "name": str(value)}
    if isinstance(value, (list, tuple)) and len(value) <= _MOST_ITEMS:
        return {"kind": "tuple" if isinstance(value, tuple) else "list", "items": [_describe(v) for v in value]}
    return {"kind": "other", "type": type(value).__name__}


def _replace_in(registry, original, wrapper, depth=2):
    """Puts `wrapper` where `registry` (a dict, and the dicts in it) holds `original`."""
    for key, value in list(registry.items()):
        if value is original:
            registry[key] = wrapper
        elif depth > 1 and isinstance(value, dict):
            _replace_in(value, original, wrapper, depth - 1)


def pytest_sessionstart(session):
    spec = session.config.getoption("--cutile-perf-calls-of")
    if not spec:
        return
    module_name, name = spec.split(":")
    module = importlib.import_module(module_name)
    original = getattr(module, name)

    @functools.wraps(original)
    def recorded(*args, **kwargs):
        _calls.append({"args": [_describe(a) for a in args], "kwargs": {k: _describe(v) for k, v in kwargs.items()}})
        return original(*args, **kwargs)

    setattr(module, name, recorded)
    for loaded in list(sys.modules.values()):
        try:
            values = list(vars(loaded).values())
        except TypeError:
            continue
        for value in values:
            if isinstance(value, dict):
                _replace_in(value, original, recorded)


def pytest_sessionfinish(session):
    target = session.config.getoption("--cutile-perf-calls-to")
    if target:
        with open(target, "w") as out:
            for call in _calls:
                out.write(json.dumps(call) + "\n")


def pytest_runtest_setup(item):
    if not item.config.getoption("--cutile-perf-growth-to"):
        return
    growth = getattr(getattr(item, "callspec", None), "params", {}).get("growth")
    _growth["current"] = growth
    reached = _growth["reached"]
    if _growth["failed"] or (reached is not None and growth is not None and growth > 4 * reached):
        pytest.skip("grown enough")


def pytest_runtest_logreport(report):
    target = _growth["target"]
    if report.when != "call" or target is None or _growth["current"] is None:
        return
    if not report.passed:
        _growth["failed"] = True
        return
    for name, value in report.user_properties:
        if name != "benchmark":
            continue
        record = value.get("cutile", {}).get("forward", {})
        ms = record.get("median", record.get("mean"))
        if ms is None:
            continue
        with open(target, "a") as out:
            out.write(f"{_growth['current']} {ms}\n")
        if ms >= _growth["threshold"] and _growth["reached"] is None:
            _growth["reached"] = _growth["current"]


def pytest_configure(config):
    _growth["target"] = config.getoption("--cutile-perf-growth-to")
    _growth["threshold"] = float(config.getoption("--cutile-perf-growth-ms"))
