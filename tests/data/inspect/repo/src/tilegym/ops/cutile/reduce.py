# Written for git-cutile-perf's inspector tests: a shared second-stage kernel in its own module.
import cuda.tile as ct
import torch


@ct.kernel
def _reduce_kernel(partial, out):
    ct.store(out, index=(0,), tile=ct.sum(ct.load(partial, index=(0, 0), shape=(8, 64)), axis=0))


def reduce(partial, out):
    ct.launch(torch.cuda.current_stream(), (1,), _reduce_kernel, (partial, out))


def unrelated():
    return 0
