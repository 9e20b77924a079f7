#!/usr/bin/env python3
"""Where the order effect on rope's 1.5-2 us configs comes from, in TileGym's own harness, without the tool.

Usage (on the GPU machine, from TileGym's root, its src first on PYTHONPATH, then the root):
    tools/rope_order_probe.py ROUNDS [VARIANT...]
Each round starts two processes of the same code side by side, as the tool's fresh pairs do: each imports
torch and tilegym, then, when told, one at a time, makes its CUDA context and its inputs and launches each
config once (compile and tune). Then the first measures both configs with the perf test's harness (a CUDA
graph replayed after an L2 flush) while the other is stopped (SIGSTOP), then the other while the first is;
rounds alternate which process goes first. A VARIANT is `SETTLE_S` or `SETTLE_S:late` (default `0:late`,
the tool's way): SETTLE_S seconds between the contexts and the first measurement; `late`: the round before's
pair ends only once the new pair has imported, just before the new contexts (as the tool's redraw ends a
round's old workers), otherwise it ends before the new pair starts. One JSON line per round, then per
variant and config the second side's mean over the first's (ln, %): its mean and sd over the rounds.
Why: in every paired session on the H200 the side measured second read 1-3% faster on these configs in
rounds of fresh pairs, and much less in round 1, whose workers had made their contexts long before.
"""
import json
import math
import os
import signal
import subprocess
import sys
import time

# (batch, rows, q heads, kv heads, head dim, rotary share): the perf test's ids 8-1-32-32-128-1.0 (2 us)
# and 8-128-32-8-128-1.0 (6 us)
CONFIGS = [(8, 1, 32, 32, 128, 1.0), (8, 128, 32, 8, 128, 1.0)]


def child():
    """One side: imports, then answers `ready` (context, inputs, a first launch of each config) and `measure`
    (each config's harness mean, us) on stdin, one JSON line each on its own stdout."""
    reply = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # whatever the imports print goes to stderr, not into the replies
    import torch
    import tilegym
    from tests import common

    def say(value):
        reply.write(json.dumps(value) + "\n")
        reply.flush()

    tilegym.set_backend("cutile")
    say({"imported": os.getpid()})
    calls = []
    for command in sys.stdin:
        if command.strip() == "ready":
            for bsz, rows, q_heads, kv_heads, head_dim, share in CONFIGS:
                q = torch.randn((bsz, rows, q_heads, head_dim), device="cuda").transpose(1, 2).half()
                k = torch.randn((bsz, rows, kv_heads, head_dim), device="cuda").transpose(1, 2).half()
                cos = torch.randn((bsz, rows, head_dim), device="cuda").half()
                sin = torch.randn((bsz, rows, head_dim), device="cuda").half()
                call = lambda q=q, k=k, cos=cos, sin=sin, share=share: tilegym.ops.apply_rope_base(
                    q, k, cos, sin, partial_rotary_factor=share
                )
                call()
                calls.append(call)
            torch.cuda.synchronize()
            say({"ready": True})
        elif command.strip() == "measure":
            forward = [common.benchmark_framework("cutile", c, use_cudagraph=True)["cutile"]["forward"] for c in calls]
            say([round(1000 * f["mean"], 4) for f in forward])


def round_of(settle_s, late, first_is_a, previous):
    """The two sides' means of one round; its pair is left running for the next round to end."""
    if not late:
        end(previous)
    pair = [
        subprocess.Popen([sys.executable, __file__, "--child"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]

    def ask(process, command):
        if command:
            process.stdin.write(command + "\n")
            process.stdin.flush()
        return json.loads(process.stdout.readline())

    for process in pair:
        ask(process, None)  # imported, side by side
    if late:
        end(previous)
    order = pair if first_is_a else pair[::-1]
    for process in order:
        ask(process, "ready")
    time.sleep(settle_s)
    means = []
    for process, other in (order, order[::-1]):
        os.kill(other.pid, signal.SIGSTOP)
        means.append(ask(process, "measure"))
        os.kill(other.pid, signal.SIGCONT)
    return means, pair


def end(pair):
    for process in pair:
        process.kill()
        process.wait()


def main():
    rounds = int(sys.argv[1])
    variants = sys.argv[2:] or ["0:late"]
    second_over_first = {variant: [[] for _ in CONFIGS] for variant in variants}
    pair = []
    for n in range(rounds):
        # the variants in turns, so that a drift of the GPU's state falls on each alike
        for variant in variants:
            settle, _, when = variant.partition(":")
            (first, second), pair = round_of(float(settle), when == "late", n % 2 == 0, pair)
            print(json.dumps({"variant": variant, "round": n + 1, "first_us": first, "second_us": second}), flush=True)
            for i, (a, b) in enumerate(zip(first, second)):
                second_over_first[variant][i].append(100 * math.log(b / a))
    end(pair)
    for variant, per_config in second_over_first.items():
        for config, ratios in zip(CONFIGS, per_config):
            mean = sum(ratios) / len(ratios)
            sd = math.sqrt(sum((r - mean) ** 2 for r in ratios) / max(len(ratios) - 1, 1))
            name = "-".join(str(v) for v in config)
            print(f"{variant}, {name}: the second side {mean:+.2f}% (sd {sd:.2f}%, {len(ratios)} rounds)")


if __name__ == "__main__":
    child() if sys.argv[1:] == ["--child"] else main()
