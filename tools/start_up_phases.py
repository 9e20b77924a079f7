#!/usr/bin/env python3
"""Where a warm worker's start-up goes on this machine, each part timed in fresh processes of PYTHON:
the imports (torch, cuda.tile, tilegym), the CUDA context, and torch's first profiler started after the
context or before it (then the context, then a second profiler), so that one run shows which parts a
worker could pay before its round lets it go.

    tools/start_up_phases.py [PYTHON] [REPEATS]      # prints one JSON object

Run it where TileGym's `src/` and cuda.tile are importable (PYTHONPATH), on a GPU node.
"""

import json
import subprocess
import sys

IMPORTS = {
    "torch": "import torch",
    "torch_cuda_tile": "import torch, cuda.tile",
    "torch_cuda_tile_tilegym": "import torch, cuda.tile, tilegym",
}

# each prints a JSON object of the seconds its parts took, in the order they ran
ORDERS = {
    "context_then_profiler": """
import json, time
t = [time.monotonic()]
import torch
t.append(time.monotonic())
torch.empty(1, device="cuda"); torch.cuda.synchronize()
t.append(time.monotonic())
P = torch.profiler
with P.profile(activities=[P.ProfilerActivity.CPU, P.ProfilerActivity.CUDA]):
    torch.empty(1, device="cuda"); torch.cuda.synchronize()
t.append(time.monotonic())
names = ["import_s", "context_s", "profiler_s"]
print(json.dumps({n: round(b - a, 3) for n, a, b in zip(names, t, t[1:])}))
""",
    "profiler_then_context": """
import json, time
t = [time.monotonic()]
import torch
t.append(time.monotonic())
P = torch.profiler
torch.cuda.is_available()
with P.profile(activities=[P.ProfilerActivity.CPU, P.ProfilerActivity.CUDA]):
    pass
t.append(time.monotonic())
torch.empty(1, device="cuda"); torch.cuda.synchronize()
t.append(time.monotonic())
with P.profile(activities=[P.ProfilerActivity.CPU, P.ProfilerActivity.CUDA]):
    torch.empty(1, device="cuda"); torch.cuda.synchronize()
t.append(time.monotonic())
names = ["import_s", "profiler_first_s", "context_s", "profiler_s"]
print(json.dumps({n: round(b - a, 3) for n, a, b in zip(names, t, t[1:])}))
""",
}


def timed_import(python, statement):
    """Seconds a fresh interpreter takes to run `statement`, start and exit included."""
    code = f"import time; t = time.monotonic(); {statement}; print(time.monotonic() - t)"
    done = subprocess.run([python, "-c", code], capture_output=True, text=True)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1:]}
    return round(float(done.stdout.split()[-1]), 3)


def timed_order(python, script):
    done = subprocess.run([python, "-c", script], capture_output=True, text=True)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    python = sys.argv[1] if len(sys.argv) > 1 else sys.executable
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    found = {"imports": {}, "orders": {}}
    for _ in range(repeats):
        for name, statement in IMPORTS.items():
            found["imports"].setdefault(name, []).append(timed_import(python, statement))
        for name, script in ORDERS.items():
            found["orders"].setdefault(name, []).append(timed_order(python, script))
    print(json.dumps(found, indent=1))


if __name__ == "__main__":
    main()
