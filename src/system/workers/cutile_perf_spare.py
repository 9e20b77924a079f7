"""A spare worker: a process `git cutile-perf` starts once a step has kept its baseline's worker, before the
next step's code exists, so that a worker of the next step pays only its own configuration and collection.

Started as `python cutile_perf_spare.py --cutile-perf-worker=DIR` in a folder of its own, from the folder of
the tool's plugins, with the workers' environment but for what names a tree, it imports pytest, torch
where installed outside any tree, and the modules the session's last worker loaded from outside its tree
(`preload` in its channel, which the tool copies from that worker's `modules`), cuda-tile's left out;
makes its CUDA context and starts the profiler once (the worker's own warm-up, `cutile_perf_worker.py`);
writes `spare` (JSON: its pid, the seconds each part took and what it imported ahead) and `imported` as a
worker does; and waits.

The tool then writes `go` (JSON: the worker's command `argv`, its folder `dir` and the variables `env` it
sets), and the spare becomes that worker on the channel the command names (its own is watched until the
worker watches that one): it moves to the folder, takes the variables, the `sys.path` that
`python -m pytest` has there and the arguments, and runs pytest in this process. Where that could load
other code than a fresh worker would, it replaces itself (exec, same pid) with the worker's own command
instead, which starts as any fresh one:

- a module it imported would come from elsewhere on the worker's path (the tree's own `torch`, say), but
  for the tool's own plugins, which the tool writes anew beside each worker, where their bytes are the
  same;
- a file it imported changed or went away on disk since;
- a variable differs that was read already (any but `PYTHONPATH`, and cuda-tile's `CUDA_TILE_*` while
  `cuda.tile` is not imported).

`stop`, no `go` for `--cutile-perf-worker-idle` seconds, or its channel gone end it, as they end a worker.
"""

import importlib
import importlib.machinery
import json
import os
import sys
import time

import cutile_perf_worker as worker

# the process's variables and `sys.path` as it started: what `go` is compared with
_STARTED_ENV = dict(os.environ)
_STARTED_PATH = list(sys.path)


def _option(name, default):
    prefix = f"{name}="
    for arg in sys.argv[1:]:
        if arg.startswith(prefix):
            return arg[len(prefix) :]
    return default


def _import_ahead(channel):
    """Imports torch where it is installed, then the modules the session's last worker loaded from outside
    its tree (`preload` in the channel, where the tool put it) but cuda-tile's, which reads variables that
    name the tree the worker compiles from. A module the tree has one of its own of is found again at
    `go` (and the worker's command runs afresh); one that cannot be imported here is left to the worker."""
    try:
        with open(os.path.join(channel, "preload")) as f:
            names = [name for name in json.load(f) if isinstance(name, str)]
    except (OSError, ValueError):
        names = []
    imported = []
    for name in ["torch", *names]:
        if name in ("cuda", "__main__") or name in sys.modules or name in worker.TOOL_PLUGINS:
            continue
        try:
            importlib.import_module(name)
            imported.append(name)
        except BaseException:  # anything a module does at import stays its own: the worker imports it
            pass
    return imported


def _go(channel, idle_s):
    """The worker's command once the tool writes it; None when told to stop or idle too long."""
    go = os.path.join(channel, "go")
    stop = os.path.join(channel, "stop")
    waited = 0.0
    while waited < idle_s:
        if os.path.exists(go):
            with open(go) as f:
                return json.load(f)
        if os.path.exists(stop):
            return None
        time.sleep(worker.POLL_S)
        waited += worker.POLL_S
    return None


def _worker_path(directory, env):
    """`sys.path` as `python -m pytest` has it in `directory` under `env`: the folder, then `PYTHONPATH`,
    then what the interpreter added itself (what this process started with, less its own `PYTHONPATH`)."""

    def entries(value):
        return [os.path.abspath(entry) for entry in (value or "").split(os.pathsep) if entry]

    started = set(entries(_STARTED_ENV.get("PYTHONPATH")))
    own = [entry for entry in _STARTED_PATH[1:] if entry not in started]
    path = []
    for entry in [directory, *entries(env.get("PYTHONPATH")), *own]:
        if entry not in path:
            path.append(entry)
    return path


def _why_not_here(env, path, imported):
    """Why this process cannot become the worker `env` and `path` describe, or None."""
    for name, value in env.items():
        if _STARTED_ENV.get(name) == value or name == "PYTHONPATH":
            continue
        # cuda-tile reads its variables as it is imported
        if name.startswith("CUDA_TILE_") and "cuda.tile" not in sys.modules:
            continue
        return f"{name} differs from the spare's"
    for name, module in list(sys.modules.items()):
        spec = getattr(module, "__spec__", None)
        if "." in name or name == "__main__" or spec is None or not spec.has_location:
            continue
        found = importlib.machinery.PathFinder.find_spec(name, path)
        if found is not None and name in worker.TOOL_PLUGINS and _same_bytes(found.origin, spec.origin):
            # the tool writes its plugins anew for each worker: the same code in another folder
            continue
        if found is None or found.origin != spec.origin:
            return f"module {name} would load from {found.origin if found else 'nowhere'}, not {spec.origin}"
    for file, was in imported.items():
        if worker._stat(file) != was:
            return f"{file}, which it imported, changed since"
    return None


def _same_bytes(one, other):
    try:
        with open(one, "rb") as a, open(other, "rb") as b:
            return a.read() == b.read()
    except OSError:
        return False


def main():
    # this program runs as `__main__`: under its plugin's name too, the worker it becomes leaves it off
    # what it imported, as it does the tool's other plugins (its folder goes once the spare is a worker)
    sys.modules.setdefault("cutile_perf_spare", sys.modules[__name__])
    channel = _option("--cutile-perf-worker", None)
    idle_s = float(_option("--cutile-perf-worker-idle", "900"))
    worker._write(channel, "pid", {"pid": os.getpid()})
    worker._watch(channel)
    began = time.monotonic()
    ahead = _import_ahead(channel)
    phases = {"imported_s": round(time.monotonic() - began, 3)}
    phases["context_s"] = worker._timed(worker._cuda_context)
    phases["profiler_s"] = worker._timed(worker._warm_profiler)
    imported = worker._imported(os.getcwd())
    worker._write(channel, "imported", imported)
    worker._write(channel, "spare", {"pid": os.getpid(), "phases": phases, "imported_ahead": ahead})
    go = _go(channel, idle_s)
    if go is None:
        return 0
    worker._WENT_AT.append(time.monotonic())
    argv, directory, env = go["argv"], go["dir"], go["env"]
    os.chdir(directory)
    path = _worker_path(directory, env)
    why = _why_not_here(env, path, imported)
    os.environ.update(env)
    if why is not None:
        print(f"git cutile-perf spare: starting afresh: {why}", flush=True)
        # the fresh command counts its phases from here too, and says why it is one
        os.environ[worker.WENT_AT_VARIABLE] = repr(worker._WENT_AT[0])
        os.environ[worker.AFRESH_VARIABLE] = why
        os.execvp(argv[0], argv)
    sys.path[:] = path
    import pytest

    arguments = next(argv[i + 2 :] for i in range(len(argv)) if argv[i : i + 2] == ["-m", "pytest"])
    sys.argv = [os.path.join(os.path.dirname(pytest.__file__), "__main__.py"), *arguments]
    code = pytest.main(arguments)
    sys.stdout.flush()
    return int(code)


if __name__ == "__main__":
    sys.exit(main())
