"""A pytest plugin that `git cutile-perf` loads (`-p`) into the correctness run it makes before it keeps a
step: every seed the tests set (random, numpy, torch and torch.cuda) is shifted by an offset that neither
side has seen (`--cutile-perf-seed-offset N`), and the generators are seeded with it once at start, so the
tests draw inputs that no earlier run drew. A kernel that passes its tests only on the inputs they usually
draw fails here, where the baseline's code passes.
"""

import functools
import random

_offset = 0


def pytest_addoption(parser):
    parser.addoption(
        "--cutile-perf-seed-offset",
        type=int,
        default=0,
        help="shift every seed the tests set by this much (git cutile-perf's unseen-input check)",
    )


def _shifting(seed):
    @functools.wraps(seed)
    def shifted(value=None, *args, **kwargs):
        if isinstance(value, int):
            value = (value + _offset) % (2**32)
        return seed(value, *args, **kwargs)

    shifted.cutile_perf_shifted = True
    return shifted


def _shift(module, name):
    seed = getattr(module, name, None)
    if seed is not None and not getattr(seed, "cutile_perf_shifted", False):
        setattr(module, name, _shifting(seed))


def shift_seeds(offset):
    """Shifts every seed the tests set by `offset` from now on (0: no shift), and seeds the generators with
    it. A warm worker calls it around the one repetition that runs on unseen inputs."""
    global _offset
    _offset = offset
    if not offset:
        return
    _shift(random, "seed")
    random.seed(offset)
    try:
        import numpy

        _shift(numpy.random, "seed")
        numpy.random.seed(offset % (2**32))
    except Exception:
        pass
    try:
        import torch

        for module, name in ((torch, "manual_seed"), (torch.cuda, "manual_seed"), (torch.cuda, "manual_seed_all")):
            _shift(module, name)
        torch.manual_seed(offset)
    except Exception:
        pass


def pytest_configure(config):
    shift_seeds(config.getoption("--cutile-perf-seed-offset"))
