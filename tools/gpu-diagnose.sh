#!/usr/bin/env bash
# On a GPU machine with Nsight Compute: the evidence for `diagnose` and `compare` in one run
# of about six minutes. In a fresh copy of a TileGym checkout (the checkout itself is not touched):
#   1. rms_norm: a session, one step that puts TMA on the static-persistent output store (expected:
#      reverted, slower), `diagnose` of that config at iterations 0 and 1, and `compare 0 1`;
#   2. matmul (two 4096^3 fp16 configs): a session and `diagnose` of its heaviest config;
#   3. a small-grid kernel (default flash_decode at batch 1, 32 heads, 512 keys): a session and
#      `diagnose`.
# Every command's output, timing and the ncu logs go to OUT_DIR.
# Usage: tools/gpu-diagnose.sh /path/to/TileGym OUT_DIR [PYTHON]
# Override the small kernel with SMALL_KERNEL (a TileGym ops kernel) and SMALL_FILTER (a -k expression).
set -uo pipefail
source "$(dirname "$0")/gpu-common.sh"
setup gpu-diagnose "$@"
small="${SMALL_KERNEL:-flash_decode}"
small_filter="${SMALL_FILTER:-test_op or 512-128-1-}"
matmul_filter='float16 and (False-False-False-4096-4096-4096 or True-True-False-False-4096-4096-4096 or 1024-1024-1024-0-0-False-False)'

# the diagnoses cached as git notes, and the session's log
keep_notes() {
  git log --format='%H %s' > "$out/$1-log.txt"
  git notes --ref refs/notes/cutile-perf-diagnose list | while read -r _ commit; do
    echo "== $commit"; git notes --ref refs/notes/cutile-perf-diagnose show "$commit"; echo
  done > "$out/$1-notes.txt" 2>&1
}

{
  nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader
  ncu --version
  "$tool" --version
} > "$out/versions.txt" 2>&1
# which of the diagnosis metrics this ncu knows (an unknown one would make ncu profile nothing)
ncu --query-metrics > "$out/ncu-query-metrics.txt" 2>&1
for m in sm__throughput gpu__dram_throughput gpu__compute_memory_throughput sm__warps_active \
  sm__maximum_warps_per_active_cycle_pct l1tex__t_bytes_pipe_lsu_mem_local_op_ld \
  sm__pipe_tensor_op_hmma_cycles_active sm__pipe_tensor_op_gmma_cycles_active \
  smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active; do
  grep -q "^$m " "$out/ncu-query-metrics.txt" && echo "$m: listed" || echo "$m: NOT listed"
done > "$out/ncu-metrics-known.txt"

# 1. rms_norm: TMA on the persistent store, diagnosed before and after
cd "$(fresh rms_norm)" || exit 1
use_sources
run rms-start start rms_norm --suite ops --class memory --python "$python" --json
grep -q 'allow_tma=False' src/tilegym/ops/cutile/rms_norm.py || echo "warning: no allow_tma=False in rms_norm.py" | tee -a "$out/timings.txt"
sed -i '/allow_tma=False/d' src/tilegym/ops/cutile/rms_norm.py
run rms-step step --continue --json --opt F "TMA on the static-persistent output store"
# the static-persistent config the TMA store slowed most in the earlier session
persistent="$(git log --format=%B | sed -n 's/^Cutile-Perf-Config: [^ ]* [^ ]* //p' | grep -F static_persistent-262144-4096 | head -1)"
echo "rms_norm config: $persistent" >> "$out/timings.txt"
run rms-diagnose-0 diagnose 0 --config "$persistent" --budget 3m
run rms-diagnose-1 diagnose 1 --config "$persistent" --budget 3m
run rms-compare compare 0 1
run rms-compare-json compare 0 1 --json
keep_notes rms

# 2. matmul: expected compute-bound
cd "$(fresh matmul)" || exit 1
use_sources
run matmul-start start matmul --suite ops --class compute --budget 4m --python "$python" --filter "$matmul_filter" --json
run matmul-diagnose diagnose --budget 3m
keep_notes matmul

# 3. a small-grid kernel: expected latency or scheduling
cd "$(fresh "$small")" || exit 1
use_sources
run small-start start "$small" --suite ops --budget 3m --python "$python" --filter "$small_filter" --json
run small-diagnose diagnose --budget 3m
keep_notes small

rm -rf "$work"
ls -l "$out"
