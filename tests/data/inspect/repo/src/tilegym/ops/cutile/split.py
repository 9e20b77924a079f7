# Written for git-cutile-perf's inspector tests: a kernel whose op also launches an imported one.
import cuda.tile as ct
import torch

from tilegym.backend import register_impl
from tilegym.ops.cutile.reduce import reduce

from .reduce import _reduce_kernel as shared_kernel


@ct.kernel
def _split_kernel(x, partial):
    ct.store(partial, index=(ct.bid(0), 0), tile=ct.load(x, index=(ct.bid(0), 0), shape=(1, 64)))


def _second_stage(partial, out):
    ct.launch(torch.cuda.current_stream(), (1,), shared_kernel, (partial, out))


@register_impl("split", backend="cutile")
def split(x):
    partial = torch.empty((8, 64))
    out = torch.empty((64,))
    ct.launch(torch.cuda.current_stream(), (8,), _split_kernel, (x, partial))
    reduce(partial, out)
    return out
