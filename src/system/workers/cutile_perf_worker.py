"""A pytest plugin that `git cutile-perf` loads (`-p`) into a warm worker: one pytest session that collects
the perf selection once, then runs it again each time the tool asks, one repetition per command.

The tool owns the channel, a directory given as `--cutile-perf-worker=DIR`:

- the worker writes `pid` (JSON: its pid where it runs) as it starts, and `ready` (JSON: its pid and the
  cases it collected) when collection is over, or
  `cold` (JSON: why) when the suite cannot be kept warm (then it runs nothing and ends);
- the tool writes `run-N` (JSON: the JUnit path of command N, the `-k` expression that picks its cases
  among those collected, the cases' JUnit ids (`classname::name`) when a round runs only some of them,
  null for all, and the seed offset of the unseen-input check, 0 for none);
- the worker runs them and writes `done-N` (JSON: how many ran and failed) once the JUnit file is complete;
- `owner` (text: the pid, start time and boot of the tool that uses the worker now) is watched: its process
  gone (the tool killed) ends the worker's whole process group at once, mid-case too; no `owner` is a
  worker kept between commands, which lives on in a session of its own;
- `held` (text: process groups, space-separated) names the other side's workers, which the tool stops
  (SIGSTOP) while this one measures; should the tool be killed meanwhile, this worker's watch lets them go
  on (SIGCONT) before it ends its own group, so that their watches end them too;
- `standby` (empty), there before the worker starts, makes it wait once collected: the tool starts a later
  round's worker while this round measures, and takes the file away when that round begins; only then does
  the worker make its CUDA context and say `ready`;
- `ready` also holds where the start-up went (`phases`): the process's age when pytest was configured
  (its interpreter, pytest, the first conftests and what they import) and when collected, and the
  seconds its CUDA context and its profiler's first start took; and what it compiled of its own tree
  (`sources`: each path there and the git blob id of the bytes compiled), which the tool holds to the
  side's commit;
- a spare (`cutile_perf_spare.py`) started before the worker's code existed becomes the worker on its own
  channel when the tool writes `go`; its phases count from then, and name why (`afresh`) where the spare
  started the worker's command afresh instead;
- `stop` ends the worker, as does no command for `--cutile-perf-worker-idle` seconds, or its channel gone;
- the worker writes `imported` (JSON: `{path: [bytes, mtime_ns]}`), and `modules` (JSON: the top-level
  modules it loaded from outside its tree, which a spare for a later worker imports ahead), when collected
  and after each command:
  every file its modules were loaded from outside its own tree, and each directory on `sys.path` outside
  it (a module or `.pth` file added there changes its time), so that the tool ends a kept worker whose
  imported code changed on disk since (a library upgraded, a site-packages file edited).

Each file appears whole (written beside, then renamed), so neither side reads half a message. Files rather
than a FIFO: a dead peer never blocks an open, and they work where the tests run on a Slurm node that
shares the file system.

Between repetitions the per-case state is reset (`record_property` values, captured output sections),
and the JUnit writer is a fresh one per repetition; session-scoped fixtures, imported modules and the
kernels' compile and tuning caches are kept, which is the point.

Each side measures in the same GPU state: where the tests imported torch and a GPU is there, the worker
makes its CUDA context and starts torch's profiler once (the census's first profiler then costs no round
anything) before it says `ready` (the tool waits for both sides' `ready` before either measures), and hands its cached blocks back to the driver after each command. On an H200, with the
context made in the first case and the cache kept, the side measured second in a round ran beside the
first's context and cached blocks, the first on an empty GPU, and the second was often 2-7% slower on
microsecond kernels; with this, a later session saw it 1-3% faster instead: the tool's verdict fits the
order of the sides out either way.
"""

import json
import os
import signal
import sys
import threading
import time

import pytest
from cutile_perf_cases import junit_id

POLL_S = 0.02


# each source of the worker's tree it compiled, by its path there: the git blob id of the bytes it
# compiled, or why there is none; sent with `ready`, so that the tool holds them to the side's commit
_SOURCES = {}


def _blob_id(data):
    """The id git gives a file of these bytes."""
    import hashlib

    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _sources_only(tree):
    """Has this process compile the modules of `tree` (its side's code and tests) from their sources at
    each import, never from bytecode beside them: a `.pyc` another side's code wrote there, even one
    removed again before the tool looked, is never run here. What it compiled is noted in `_SOURCES`:
    a source another side's code changed and put back meanwhile is found by the tool. The standard
    library and site-packages load as they always do."""
    import importlib.machinery
    from _pytest.assertion import rewrite

    loader = importlib.machinery.SourceFileLoader
    inner = loader.get_code
    prefix = os.path.join(os.path.realpath(tree), "")

    def get_code(self, fullname):
        path = self.get_filename(fullname)
        real = os.path.realpath(path)
        if real.startswith(prefix):
            data = self.get_data(path)
            _SOURCES[real[len(prefix) :]] = _blob_id(data)
            return self.source_to_code(data, path)
        return inner(self, fullname)

    loader.get_code = get_code
    # pytest reads its rewritten test modules' bytecode even where it writes none (a pytest without
    # this reader has nothing of the kind to turn off)
    inner_read_pyc = getattr(rewrite, "_read_pyc", None)
    if inner_read_pyc is None:
        return

    def read_pyc(source, pyc, *args, **kwargs):
        if os.path.realpath(str(source)).startswith(prefix):
            return None
        return inner_read_pyc(source, pyc, *args, **kwargs)

    rewrite._read_pyc = read_pyc
    inner_rewrite = getattr(rewrite, "_rewrite_test", None)
    if inner_rewrite is None:
        return

    def rewrite_test(fn, *args, **kwargs):
        # pytest reads the test module itself: the bytes before and after are those it compiled
        real = os.path.realpath(str(fn))
        if not real.startswith(prefix):
            return inner_rewrite(fn, *args, **kwargs)
        with open(real, "rb") as f:
            before = f.read()
        compiled = inner_rewrite(fn, *args, **kwargs)
        with open(real, "rb") as f:
            after = f.read()
        _SOURCES[real[len(prefix) :]] = _blob_id(before) if before == after else "changed while read"
        return compiled

    rewrite._rewrite_test = rewrite_test


# the process's age once pytest was configured, for `ready`'s phases
_CONFIGURED_AT_AGE = pytest.StashKey()
# when a spare worker (`cutile_perf_spare.py`) was given this worker's command, its phases count from then
# (the monotonic clock's reading, passed on in this variable where the spare started the command afresh)
WENT_AT_VARIABLE = "CUTILE_PERF_WORKER_WENT_AT"
_WENT_AT = [float(os.environ.pop(WENT_AT_VARIABLE))] if WENT_AT_VARIABLE in os.environ else []
# why the spare given this worker's command started it afresh, for `ready`'s phases
AFRESH_VARIABLE = "CUTILE_PERF_SPARE_AFRESH"
_AFRESH = os.environ.pop(AFRESH_VARIABLE, None)


def pytest_addoption(parser):
    # called as pytest registers the plugin (`-p`), before any conftest or test module is imported, in the
    # side's tree as its directory; a spare imported this module before it had a tree
    _sources_only(os.getcwd())
    parser.addoption("--cutile-perf-worker", default=None, help="git cutile-perf's channel directory")
    parser.addoption(
        "--cutile-perf-worker-idle",
        type=float,
        default=900.0,
        help="seconds without a command before the worker ends",
    )


def _write(channel, name, value):
    path = os.path.join(channel, name)
    with open(path + ".part", "w") as f:
        json.dump(value, f)
    os.replace(path + ".part", path)


def _stat(path):
    try:
        found = os.stat(path)
    except OSError:
        return None
    return [found.st_size, found.st_mtime_ns]


def _write_imported(channel, root):
    """Writes `imported` ([`_imported`]), for the tool to hold to the disk before it reuses the worker, and
    `modules`: the names of the top-level modules it loaded from outside `root`, the tool's plugins left
    out, which a spare started for a later worker of the session imports before it has a tree."""
    _write(channel, "imported", _imported(root))
    inside = os.path.join(os.path.realpath(root), "")
    names = sorted(
        name
        for name, module in list(sys.modules.items())
        if "." not in name
        and name not in TOOL_PLUGINS
        and isinstance(getattr(module, "__file__", None), str)
        and not os.path.realpath(module.__file__).startswith(inside)
    )
    _write(channel, "modules", names)


# the tool's own plugins: it tells their code by a digest of its own, and writes them anew for each worker
TOOL_PLUGINS = ("cutile_perf_worker", "cutile_perf_cases", "cutile_perf_census", "cutile_perf_seeds", "cutile_perf_spare")


def _tool_plugin_files():
    """The files the tool's plugins loaded here came from, and their folders."""
    files = {getattr(sys.modules.get(name), "__file__", None) for name in TOOL_PLUGINS}
    files.discard(None)
    return files | {os.path.dirname(path) for path in files}


def _imported(root):
    """The files this process's modules came from and the `sys.path` directories, those outside `root` (its
    tree, whose code the tool tells by its commit) and but the tool's own plugins, each with its size and
    time."""
    inside = os.path.join(os.path.realpath(root), "")
    paths = {getattr(module, "__file__", None) for module in list(sys.modules.values())}
    paths.update(entry for entry in sys.path if entry)
    paths -= _tool_plugin_files()
    found = {}
    for path in paths:
        if not isinstance(path, str) or not os.path.isabs(path) or os.path.realpath(path).startswith(inside):
            continue
        stat = _stat(path)
        if stat is not None:
            found[path] = stat
    return found


def _cannot_stay_warm(config):
    """Why this suite cannot be kept warm in one process, or None."""
    if getattr(config.option, "numprocesses", None) or getattr(config.option, "dist", "no") != "no":
        return "pytest-xdist runs the tests in other processes"
    try:
        from _pytest import junitxml

        if config.stash.get(junitxml.xml_key, None) is None:
            return "pytest's JUnit writer is not active"
    except Exception as e:  # an older or newer pytest without the writer's stash key
        return f"this pytest's JUnit writer cannot be renewed ({e})"
    return None


def _fresh_junit(config, path):
    """Replaces the JUnit writer with one that writes `path`, keeping the options the tool gave."""
    from _pytest import junitxml

    old = config.stash[junitxml.xml_key]
    new = junitxml.LogXML(
        path,
        old.prefix,
        old.suite_name,
        old.logging,
        old.report_duration,
        old.family,
        old.log_passing_tests,
    )
    config.pluginmanager.unregister(old)
    config.stash[junitxml.xml_key] = new
    config.pluginmanager.register(new)
    return new


def _owner_alive(text):
    """Whether the process the tool wrote as `pid start_ticks boot_id` still runs (not a reused pid)."""
    try:
        pid, ticks, boot = text.split()
        with open("/proc/sys/kernel/random/boot_id") as f:
            if f.read().strip() != boot:
                return False
        with open(f"/proc/{int(pid)}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return fields[0] != "Z" and fields[22 - 3] == ticks
    except (OSError, ValueError, IndexError):
        return False


# the channel this process watches: a spare's own, until the worker it becomes watches the worker's
_WATCHED = [None]


def _watch(channel):
    """Ends this worker's process group (it leads it) as soon as its channel is gone or the tool that owns
    it now is; between commands it has no owner and lives on. One channel at a time: the watch of a
    spare's channel ends once the worker it became watches its own."""
    _WATCHED[0] = channel
    owner = os.path.join(channel, "owner")

    def watch():
        while _WATCHED[0] == channel:
            if not os.path.isdir(channel):
                break
            try:
                with open(owner) as f:
                    text = f.read()
            except FileNotFoundError:
                text = None
            except OSError:
                break
            if text is not None and not _owner_alive(text):
                break
            time.sleep(0.2)
        else:
            return
        try:
            with open(os.path.join(channel, "held")) as f:
                groups = [int(group) for group in f.read().split()]
        except (OSError, ValueError):
            groups = []
        for group in groups:
            try:
                os.killpg(group, signal.SIGCONT)
            except OSError:
                pass
        os.killpg(os.getpgrp(), signal.SIGKILL)

    threading.Thread(target=watch, name="cutile-perf-owner-watch", daemon=True).start()


def _cuda_context():
    """Makes this process's CUDA context now, where the tests imported torch and it sees a GPU."""
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_available():
            torch.cuda.init()
            torch.empty(1, device="cuda")
            torch.cuda.synchronize()
    except Exception:  # the cases say what is wrong with the GPU
        pass


def _warm_profiler():
    """Starts and stops torch's profiler once over a trivial GPU call, where torch has its GPU context: the
    first profiler of a process pays CUPTI's start (5-7 s on an H200, against 7 ms for each later one), which
    the census of the worker's first command would pay otherwise, inside a round."""
    torch = sys.modules.get("torch")
    try:
        if torch is None or not torch.cuda.is_initialized():
            return
        profiler = torch.profiler
        activities = [profiler.ProfilerActivity.CPU, profiler.ProfilerActivity.CUDA]
        with profiler.profile(activities=activities):
            torch.empty(1, device="cuda")
            torch.cuda.synchronize()
    except Exception:  # the census says what it could not have
        pass


def _age_s():
    """Seconds since this process started (its interpreter, pytest's start, the imports), from /proc, or
    since a spare was given this worker's command; None where the system does not say."""
    if _WENT_AT:
        return round(time.monotonic() - _WENT_AT[0], 3)
    try:
        with open("/proc/self/stat") as f:
            # the fields after the command's name, which may hold spaces; the 22nd field is the start time
            started_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            uptime_s = float(f.read().split()[0])
        return round(max(0.0, uptime_s - started_ticks / os.sysconf("SC_CLK_TCK")), 3)
    except (OSError, ValueError, IndexError):
        return None


def _timed(work):
    """Runs `work`; returns the seconds it took."""
    began = time.monotonic()
    work()
    return round(time.monotonic() - began, 3)


def _release_cached_blocks():
    """Hands torch's cached GPU blocks back to the driver, so the other side measures beside none."""
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_initialized():
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
    except Exception:
        pass


def pytest_configure(config):
    channel = config.getoption("--cutile-perf-worker")
    if channel:
        # its pid where it runs (a Slurm node's), before collection: the tool's GPU watch counts it as ours
        _write(channel, "pid", {"pid": os.getpid()})
        _watch(channel)
        config.stash[_CONFIGURED_AT_AGE] = _age_s()


def _command(channel, number, idle_s):
    """The next command: ("run", payload), or ("stop", None) when told or idle too long."""
    run = os.path.join(channel, f"run-{number}")
    stop = os.path.join(channel, "stop")
    waited = 0.0
    while waited < idle_s:
        if os.path.exists(run):
            with open(run) as f:
                return "run", json.load(f)
        if os.path.exists(stop):
            return "stop", None
        time.sleep(POLL_S)
        waited += POLL_S
    return "stop", None


def _stood_by(channel, idle_s):
    """Waits while the channel holds `standby`; False when told to stop or idle too long meanwhile."""
    standby = os.path.join(channel, "standby")
    stop = os.path.join(channel, "stop")
    waited = 0.0
    while os.path.exists(standby):
        if os.path.exists(stop) or waited >= idle_s:
            return False
        time.sleep(POLL_S)
        waited += POLL_S
    return True


def _chosen(items, expression):
    """The collected cases that the `-k` expression picks, by pytest's own keyword matching."""
    from _pytest.mark import KeywordMatcher
    from _pytest.mark.expression import Expression

    compiled = Expression.compile(expression)
    return [item for item in items if compiled.evaluate(KeywordMatcher.from_item(item))]


def _after_last(item, chosen, collected):
    """Where pytest tears the last case down to: another case (the next command's first, likely), never the
    case itself, whose own fixtures must go; None (all torn down) only for a lone collected case."""
    for other in (chosen[0], *collected):
        if other is not item:
            return other
    return None


def _repetition(session, items, junit_path):
    """Runs `items` once more, their records into a fresh JUnit file; returns how many failed."""
    writer = _fresh_junit(session.config, junit_path)
    writer.pytest_sessionstart()
    # what the last command left set up and this one's first case does not share (another module's
    # fixtures) goes first, as pytest does between consecutive cases
    session._setupstate.teardown_exact(items[0])
    failed_before = session.testsfailed
    for i, item in enumerate(items):
        item.user_properties.clear()
        item._report_sections = []
        # the next case, or another one after the last: session- and module-scoped fixtures stay set up
        # between commands (None would tear them all down)
        nextitem = items[i + 1] if i + 1 < len(items) else _after_last(item, items, session.items)
        item.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
        if session.shouldstop or session.shouldfail:
            break
    writer.pytest_sessionfinish()
    return session.testsfailed - failed_before


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    config = session.config
    channel = config.getoption("--cutile-perf-worker")
    if not channel:
        return None
    why = _cannot_stay_warm(config)
    if why is None and session.testsfailed:
        why = f"{session.testsfailed} errors during collection"
    if why is None:
        try:
            _chosen(session.items, "not cutile_perf_probe")
        except Exception as e:
            why = f"this pytest's -k matching cannot be reused ({e})"
    seeds = config.pluginmanager.get_plugin("cutile_perf_seeds")
    if why is not None:
        _write(channel, "cold", {"why": why})
        return True
    items = list(session.items)
    phases = {"configured_s": config.stash.get(_CONFIGURED_AT_AGE, None), "collected_s": _age_s()}
    if not _stood_by(channel, config.getoption("--cutile-perf-worker-idle")):
        return True
    phases["context_s"] = _timed(_cuda_context)
    phases["profiler_s"] = _timed(_warm_profiler)
    if _AFRESH is not None:
        phases["afresh"] = _AFRESH
    _write_imported(channel, config.rootpath)
    cases = [item.nodeid for item in items]
    _write(channel, "ready", {"pid": os.getpid(), "cases": cases, "phases": phases, "sources": _SOURCES})
    number = 1
    while True:
        what, payload = _command(channel, number, config.getoption("--cutile-perf-worker-idle"))
        if what == "stop":
            break
        chosen = _chosen(items, payload["select"])
        if payload.get("cases") is not None:
            wanted = set(payload["cases"])
            chosen = [item for item in chosen if junit_id(item) in wanted]
        offset = payload.get("seed_offset") or 0
        if offset:
            seeds.shift_seeds(offset)
        try:
            failed = _repetition(session, chosen, payload["junit"]) if chosen else 0
        finally:
            if offset:
                seeds.shift_seeds(0)
            _release_cached_blocks()
        _write_imported(channel, config.rootpath)
        _write(channel, f"done-{number}", {"failed": failed, "ran": len(chosen)})
        number += 1
    return True
