# Written for git-cutile-perf's inspector tests: the ways a file may name cuTile's API.
import torch
from cuda import tile
from cuda.tile import kernel as tile_kernel
from cuda.tile import launch

from tilegym.backend import register_impl


@tile.kernel
def plain(x, out):
    tile.store(out, index=(0,), tile=tile.load(x, index=(0,), shape=(64,)))


@tile_kernel(occupancy=2, num_ctas=1)
def hinted(a, b, c):
    acc = tile.mma(a, b, tile.zeros((32, 32), dtype=tile.float32))
    tile.store(c, index=(0, 0), tile=tile.astype(acc, tile.bfloat16))


def helper_body(x):
    return x


wrapped = tile.kernel(helper_body, occupancy=4)


def _launch_on(stream, grid, which, args):
    launch(stream, grid, which, args)


def pick(x, out, fast):
    if fast:
        chosen = hinted.replace_hints(occupancy=1)
    else:
        chosen = plain
    stream = torch.cuda.current_stream()
    grid = (x.shape[0], 1, 1)
    launch(stream, grid, chosen, (x, out))


_cache = {}


def cached(x, out):
    key = x.shape
    if key not in _cache:
        _cache[key] = ("cfg", wrapped)
    cfg, tuned = _cache[key]
    _launch_on(torch.cuda.current_stream(), (1,), tuned, (x, out))


class _Function(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        out = torch.empty_like(x)
        pick(x, out, True)
        return out


apply_function = _Function.apply


@register_impl("spellings.op", backend="cutile")
def spellings_op(x):
    return apply_function(x)


@register_impl("spellings.cached", backend="cutile")
def spellings_cached(x):
    out = torch.empty_like(x)
    cached(x, out)
    return out
