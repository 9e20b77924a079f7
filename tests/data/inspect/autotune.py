# Written for git-cutile-perf's inspector tests: an autotuned launch whose configs depend on the GPU.
from types import SimpleNamespace

import cuda.tile as ct
import torch
from cuda.tile.tune import exhaustive_search as search


@ct.kernel
def tiled(x, out, BLOCK: ct.Constant[int]):
    ct.store(out, index=(0,), tile=ct.load(x, index=(0,), shape=(BLOCK,)))


def _configs():
    major, minor = torch.cuda.get_device_capability()
    if (major, minor) in [(12, 0), (12, 1)]:
        yield SimpleNamespace(BLOCK=64, occupancy=1)
    elif major < 9:
        for block in [64, 128]:
            for occ in (1, 2, 4):
                yield SimpleNamespace(BLOCK=block, occupancy=occ)
    else:
        yield SimpleNamespace(BLOCK=256, occupancy=2)
        yield SimpleNamespace(BLOCK=512, occupancy=1, num_ctas=2)


def run(x, out):
    stream = torch.cuda.current_stream()
    space = list(_configs())
    result = search(space, stream, lambda cfg: (1,), tiled, lambda cfg: (x, out, cfg.BLOCK))
    best = result.best.config
    tuned = tiled.replace_hints(occupancy=best.occupancy)
    ct.launch(stream, (1,), tuned, (x, out, best.BLOCK))
