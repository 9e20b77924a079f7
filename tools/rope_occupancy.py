#!/usr/bin/env python3
"""Which occupancy rope's own tuning picks in a fresh process, and what each occupancy costs.

Usage (on the GPU machine, the side's TileGym src first on PYTHONPATH):
    tools/rope_occupancy.py LABEL [SELECTIONS] [REPS]
For one perf config (8-128-32-8-128-1.0: batch 8, 128 rows, 32 q and 8 kv heads, head dim 128), it runs
rope's occupancy search SELECTIONS times (the tuning cache emptied before each) and prints the picks, then
times each occupancy REPS times, in turns, with events around one launch after a GPU sleep: `mean_us` with
the L2 cache as the last launch left it, `cold_us` after 256 MB are written first, as TileGym's harness does
before each repetition. One JSON line out.
Why: on the H200 the null edits' candidates read +4-7% on this config in about half of their processes and
their baselines never; a pick that flips between processes would do that, if one occupancy is slow only
where the search does not look (the search times warm launches; the benchmark, cold ones).
"""
import json
import sys

import torch
import cuda.tile as ct
import tilegym
from tilegym.ops.cutile import rope
from tilegym.ops.cutile.utils import cached_replace_hints, next_power_of_2

label = sys.argv[1]
selections = int(sys.argv[2]) if len(sys.argv) > 2 else 5
reps = int(sys.argv[3]) if len(sys.argv) > 3 else 300
tilegym.set_backend("cutile")
bsz, seq, q_heads, kv_heads, head_dim = 8, 128, 32, 8, 128
q = torch.randn((bsz, seq, q_heads, head_dim), device="cuda").transpose(1, 2).half()
k = torch.randn((bsz, seq, kv_heads, head_dim), device="cuda").transpose(1, 2).half()
cos = torch.randn((bsz, seq, head_dim), device="cuda").half()
sin = torch.randn((bsz, seq, head_dim), device="cuda").half()
occupancies = [c.occupancy for c in rope._ROPE_OCCUPANCY_CONFIGS]
kernels = {o: cached_replace_hints(rope._rope_kernel, occupancy=o) for o in occupancies}
grid = (bsz * seq, 1, 1)
args = (q, k, cos, sin, cos.shape[0], seq, next_power_of_2(q_heads), next_power_of_2(kv_heads), head_dim // 2)

picks = []
for _ in range(selections):
    rope._ROPE_TUNE_CACHE.clear()
    rope._rope_forward(q, k, cos, sin)
    chosen = next(iter(rope._ROPE_TUNE_CACHE.values()))
    picks.append(next((o for o, kern in kernels.items() if kern is chosen), None))

stream = torch.cuda.current_stream()
flush = torch.empty(256 * 1024 * 1024, dtype=torch.int8, device="cuda")


def timed(cold):
    """Each occupancy's mean launch time, in microseconds."""
    times = {o: [] for o in occupancies}
    for _ in range(reps):
        for o in occupancies:
            if cold:
                flush.zero_()
            torch.cuda._sleep(1_000_000)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            ct.launch(stream, grid, kernels[o], args)
            end.record()
            times[o].append((start, end))
    torch.cuda.synchronize()
    return {o: round(1000 * sum(s.elapsed_time(e) for s, e in pairs) / len(pairs), 3) for o, pairs in times.items()}


for o in occupancies:
    ct.launch(stream, grid, kernels[o], args)
print(json.dumps({"side": label, "picks": picks, "mean_us": timed(False), "cold_us": timed(True)}), flush=True)
