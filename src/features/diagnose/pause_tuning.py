"""A pytest plugin that `git cutile-perf diagnose` loads (`-p`) into the case it profiles under ncu.

Some TileGym kernels (matmul among them) tune on their first call with cuda.tile's `exhaustive_search`
whatever TILEGYM_DISABLE_AUTOTUNE says. The search launches the same kernel, under the same name, once per
trial, so ncu's kernel-name filter and launch skip pick trial launches instead of the tuned kernel's own.
This plugin pauses the profiler (cudaProfilerStop) while a search runs and resumes it (cudaProfilerStart)
after, so that only the kernel's own launches are profiled. Without cuda.tile's tuner or torch it does
nothing.
"""

import functools
import sys


def _profiler():
    """torch's binding of the CUDA runtime, or None."""
    try:
        import torch

        return torch.cuda.cudart()
    except Exception:
        return None


def _pausing(search):
    @functools.wraps(search)
    def paused(*args, **kwargs):
        runtime = _profiler()
        print("cutile-perf: autotune search: profiling paused", file=sys.stderr, flush=True)
        if runtime is not None:
            runtime.cudaProfilerStop()
        try:
            return search(*args, **kwargs)
        finally:
            if runtime is not None:
                runtime.cudaProfilerStart()
            print("cutile-perf: autotune search done: profiling resumed", file=sys.stderr, flush=True)

    paused.cutile_perf_paused = True
    return paused


def _install():
    try:
        import cuda.tile.tune as tune
    except Exception:
        return
    search = getattr(tune, "exhaustive_search", None)
    if search is not None and not getattr(search, "cutile_perf_paused", False):
        tune.exhaustive_search = _pausing(search)


# before the test modules are imported, so that `from cuda.tile.tune import exhaustive_search` gets the
# pausing one
_install()
