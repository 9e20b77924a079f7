#!/usr/bin/env bash
# Measures run-to-run noise on the GPU machine: N back-to-back pytest processes of each TileGym perf test
# named, unchanged code, JUnit files under $OUT/noise/ (test_<op>_<i>.xml), with the SM clock and
# temperature before each run in $OUT/noise/gpu.csv. Refit the model with them:
#   tools/fit_noise.py <dir with the files>
# Usage (on the H200, from this checkout, TILEGYM naming a TileGym checkout whose Python has torch and cuda-tile):
#   OUT=/tmp/noise TILEGYM=/path/to/TileGym tools/noise_runs.sh 8 rope silu_and_mul
# A rope perf run takes about a minute: 8 runs of rope fit in 10 minutes.
set -euo pipefail
runs=${1:?usage: noise_runs.sh RUNS OP...}
shift
out=${OUT:?OUT is not set}/noise
mkdir -p "$out"
cd "${TILEGYM:?TILEGYM is not set: set it to a TileGym checkout}"
for i in $(seq 1 "$runs"); do
  for op in "$@"; do
    nvidia-smi --query-gpu=timestamp,clocks.sm,temperature.gpu --format=csv,noheader >> "$out/gpu.csv" || true
    python3 -m pytest "tests/ops/test_${op}.py" -k "test_perf and cutile" -q -o junit_family=xunit1 \
      --junitxml="$out/test_${op}_${i}.xml" > "$out/test_${op}_${i}.log" 2>&1 \
      || echo "run $i of $op failed: see $out/test_${op}_${i}.log"
  done
done
ls "$out"
