"""Session perf file for geglu: times geglu (the cuTile op) through the checkout's harness.

Written by `git cutile-perf start --scaffold`; it lives under sandbox/ and is never committed. Before the
baseline, set SHAPES to sizes of real use and build the inputs as tests/suites/liger/test_geglu.py does
(a, b). A config that runs in a few microseconds times the launch, not the kernel: grow it.
"""

import pytest
import torch

# the kernel's correctness tests, collected here too: every step runs them before it times the op
from tests.suites.liger.test_geglu import *  # noqa: F401,F403

from tests import common
from tilegym.suites.liger.cutile.geglu import geglu as op

SHAPES = [
    ((4, 2048, 8192), torch.bfloat16),
    ((2, 4096, 14336), torch.bfloat16),
]


def make_inputs(shape, dtype):
    return (torch.randn(shape, dtype=dtype, device="cuda"), torch.randn(shape, dtype=dtype, device="cuda"),)


@pytest.mark.parametrize("shape, dtype", SHAPES, ids=lambda value: str(value).replace(" ", ""))
@pytest.mark.parametrize("backend", ["cutile"])
def test_perf(shape, dtype, backend, record_property):
    inputs = make_inputs(shape, dtype)
    result = common.benchmark_framework(backend, lambda: op(*inputs))
    record_property("benchmark", result)
