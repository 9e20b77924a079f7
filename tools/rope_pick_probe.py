#!/usr/bin/env python3
"""rope's occupancies timed by TileGym's own benchmark harness, in one process, the pick forced in turns.

Usage (on the GPU machine, from TileGym's root; the side's TileGym src first on PYTHONPATH, then the root):
    tools/rope_pick_probe.py LABEL [REPS]
For one perf config (8-128-32-8-128-1.0: batch 8, 128 rows, 32 q and 8 kv heads, head dim 128) it lets
rope's own search pick an occupancy and times the call with the harness the perf test uses (a CUDA graph
replayed after the L2 flush), then forces each occupancy (1, 7, 9, 12) in turns, REPS times, and times it
the same way. One JSON line out: the search's pick, its mean, and each forced occupancy's means.
Why: on the H200 the null edits' candidate processes read +4-7% on this config in about half of the rounds
and their baselines never. If one occupancy of the candidate's code is that slow in the harness, the forced
means show it in every candidate process, and the pick says how often a process gets it.
"""
import json
import sys

import torch
import tilegym
from tilegym.ops.cutile import rope
from tilegym.ops.cutile.utils import cached_replace_hints
from tests import common

label = sys.argv[1]
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 4
tilegym.set_backend("cutile")
bsz, seq, q_heads, kv_heads, head_dim = 8, 128, 32, 8, 128
q = torch.randn((bsz, seq, q_heads, head_dim), device="cuda").transpose(1, 2).half()
k = torch.randn((bsz, seq, kv_heads, head_dim), device="cuda").transpose(1, 2).half()
cos = torch.randn((bsz, seq, head_dim), device="cuda").half()
sin = torch.randn((bsz, seq, head_dim), device="cuda").half()
occupancies = [c.occupancy for c in rope._ROPE_OCCUPANCY_CONFIGS]
kernels = {o: cached_replace_hints(rope._rope_kernel, occupancy=o) for o in occupancies}


def call():
    return tilegym.ops.apply_rope_base(q, k, cos, sin, partial_rotary_factor=1.0)


def harness_mean_us():
    """The forward mean the perf test would record, in microseconds."""
    result = common.benchmark_framework("cutile", call, use_cudagraph=True)["cutile"]["forward"]
    return round(1000 * result["mean"], 3)


call()
chosen = next(iter(rope._ROPE_TUNE_CACHE.values()))
pick = next((o for o, kernel in kernels.items() if kernel is chosen), None)
picked_mean = harness_mean_us()

searched = rope._select_rope_kernel
forced = {o: [] for o in occupancies}
for _ in range(reps):
    for o in occupancies:
        rope._select_rope_kernel = lambda *args, kernel=kernels[o]: kernel
        forced[o].append(harness_mean_us())
rope._select_rope_kernel = searched
print(json.dumps({"side": label, "pick": pick, "picked_mean_us": picked_mean, "forced_mean_us": forced}), flush=True)
