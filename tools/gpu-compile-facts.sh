#!/usr/bin/env bash
# On a GPU machine with the CUDA toolkit and Nsight Compute: matmul's compile facts in a step's evidence,
# and why ncu read "n/a" for every matmul metric (evidence/2026-11-30-h200-diagnose/README.md). In a fresh copy of
# a TileGym checkout (the checkout itself is not touched), about seven minutes, after `step` calls
# `diagnose::facts::for_iteration` (without it, the evidence files say null):
#   1. matmul: a session (two 4096^3 fp16 perf configs), a step that adds a comment to the kernel file (the
#      diagnosis runs, its compile facts are kept), a second one with `--cause` (no diagnosis: the facts
#      come from their own run), the compile facts each step's evidence note carries
#      (`evidence-N-compile.json`), and `compare 1 2`;
#   2. `diagnose 1`, which now pauses the profiler while cuda.tile's exhaustive_search runs;
#   3. ncu straight on the heaviest perf case, each variant's CSV, log and pytest output kept (`-s`, so
#      the tuner's summary of succeeded and failed configs shows):
#      a. every launch, no name filter, one metric: which kernels launch, in what order, under what names;
#      b. what diagnose did before the pause (name filter, skip 3, count 3), with the diagnosis metrics;
#      c. the same with the pause plugin (what diagnose does now);
#      d. with APPLICATION_REPLAY=1, (b) under --replay-mode application, in case kernel replay reads n/a.
#   Each variant is cut at 2 minutes; the whole run should stay under 10 minutes.
# Every output goes to OUT_DIR; SUMMARY.txt says what to look at.
# Usage: tools/gpu-compile-facts.sh /path/to/TileGym OUT_DIR [PYTHON]
set -uo pipefail
source "$(dirname "$0")/gpu-common.sh"
setup gpu-compile-facts "$@"
matmul_filter='float16 and (False-False-False-4096-4096-4096 or True-True-False-False-4096-4096-4096 or 1024-1024-1024-0-0-False-False)'

{
  nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader
  ncu --version
  command -v cuobjdump nvdisasm tileiras
  "$tool" --version
} > "$out/versions.txt" 2>&1

# the compile facts in the evidence note of REV, as JSON ("null" when it has none)
evidence_compile() {
  git notes --ref refs/notes/cutile-perf show "$1" 2> /dev/null | "$python" -c '
import base64, gzip, json, sys
note = sys.stdin.read()
if "payload (gzip, base64):\n" not in note:
    print("null"); sys.exit()
payload = note.split("payload (gzip, base64):\n", 1)[1]
evidence = json.loads(gzip.decompress(base64.b64decode("".join(payload.split()))))
print(json.dumps(evidence.get("compile"), indent=1))'
}

# 1. a session and one step; the step's evidence should carry the compile facts
cd "$(fresh matmul)" || exit 1
use_sources
run start start matmul --suite ops --budget 4m --python "$python" --filter "$matmul_filter" --json
run next next
run status status
echo "# cutile-perf: compile facts check (a comment, no change to the kernel)" >> src/tilegym/ops/cutile/matmul.py
run step step --opt none --continue --json --budget 8m "a comment in the kernel file"
# a cause given: no diagnosis, so the compile facts come from their own run (no ncu)
echo "# cutile-perf: a second comment" >> src/tilegym/ops/cutile/matmul.py
run step-2 step --opt none --continue --json --budget 8m --cause compute "a second comment in the kernel file"
# iteration N's commit: the one whose message carries `Cutile-Perf-Iteration: N`
iteration_commit() {
  git log --format='%H' --grep="^Cutile-Perf-Iteration: $1\$" | head -1
}
evidence_compile "$(iteration_commit 1)" > "$out/evidence-1-compile.json"
evidence_compile "$(iteration_commit 0)" > "$out/evidence-0-compile.json"
evidence_compile "$(iteration_commit 2)" > "$out/evidence-2-compile.json"
run compare compare 1 2
run compare-json compare 1 2 --json

# 2. diagnose with the pause: the ncu log says when a search paused the profiler
run diagnose-1 diagnose 1 --budget 4m
node="$(sed -n 's/^profiling .* of \(.*\) with ncu \.\.\.$/\1/p' "$out/diagnose-1.err" | head -1)"
echo "profiled case: $node" | tee -a "$out/timings.txt"

# 3. ncu straight on that case
metrics=gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed
metrics+=,gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread,launch__grid_size
kernels='_matmul_kernel|_static_persistent_matmul_kernel'
plugin_dir="$work/plugin"
mkdir -p "$plugin_dir"
cp "$out/diagnose-1.ncu/cutile_perf_pause_tuning.py" "$plugin_dir/" 2> /dev/null
# variant NAME PYTEST_ARGS [ENV=VALUE...] -- NCU_ARGS... : ncu on the case (with PYTEST_ARGS added), its
# CSV, log and the case's output kept
variant() {
  local name="$1" pytest_args="$2"; shift 2
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  local start rc
  start=$(date +%s%N)
  # shellcheck disable=SC2086 # PYTEST_ARGS are words
  env TILEGYM_DISABLE_AUTOTUNE=1 "${envs[@]}" timeout 120 ncu --csv --print-units base --target-processes all \
    --log-file "$out/ncu-$name.csv" "$@" "$python" -m pytest "$node" -q -s -p no:cacheprovider $pytest_args \
    > "$out/ncu-$name.out" 2>&1
  rc=$?
  printf 'ncu-%s rc=%s wall=%sms: ncu %s\n' "$name" "$rc" "$(( ($(date +%s%N) - start) / 1000000 ))" "$*" | tee -a "$out/timings.txt"
}
[ -n "$node" ] || echo "diagnose named no profiled case (see diagnose-1.err): no ncu variants" | tee -a "$out/timings.txt"
[ -n "$node" ] && variant a-every-launch "" -- --metrics gpu__time_duration.sum --launch-count 120
[ -n "$node" ] && variant b-as-before "" -- --metrics "$metrics" --kernel-name "regex:$kernels" --launch-skip 3 --launch-count 3
[ -n "$node" ] && variant c-paused "-p cutile_perf_pause_tuning" "PYTHONPATH=$plugin_dir:$PYTHONPATH" -- --metrics "$metrics" \
  --kernel-name "regex:$kernels" --launch-skip 3 --launch-count 3
[ -n "$node" ] && [ -n "${APPLICATION_REPLAY:-}" ] && variant d-application-replay "" -- --metrics "$metrics" --kernel-name "regex:$kernels" --launch-skip 3 \
  --launch-count 1 --replay-mode application

# each launch of an ncu CSV in one line: its id, its kernel's name and every metric's value as printed
launches() {
  "$python" -c '
import csv, sys
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith("\""))]
if not rows: sys.exit()
head, seen = rows[0], {}
col = {name: i for i, name in enumerate(head)}
for r in rows[1:]:
    seen.setdefault(r[col["ID"]], [r[col["Kernel Name"]][:70]]).append(r[col["Metric Name"]].split(".")[0] + "=" + r[col["Metric Value"]])
for i, parts in seen.items():
    print("  " + i + " " + " ".join(parts))' "$1" 2> /dev/null | head -60
}

{
  for i in 1 2; do
    echo "== 1. compile facts in step $i's evidence (null = none; expected: tile_ir, and with cuobjdump resources and sass)"
    head -c 1500 "$out/evidence-$i-compile.json"; echo
  done
  echo "== the dumped files (one per kernel, or one per tuning config? a name shared by the configs would keep the last one compiled)"
  ls -l "$out"/step*.facts/tileir "$out"/diagnose-1.ncu/tileir 2> /dev/null
  echo "== compare 1 2 (expected: compile facts from evidence on both sides, none moved)"; cat "$out/compare.out"
  echo "== 2. diagnose 1"; cat "$out/diagnose-1.out" "$out/diagnose-1.err"; grep -h "cutile-perf: autotune" "$out/diagnose-1.ncu/ncu.log" 2> /dev/null | sort | uniq -c
  for v in a-every-launch b-as-before c-paused d-application-replay; do
    [ -f "$out/ncu-$v.out" ] || continue
    echo "== 3. ncu $v: each launch (id, kernel, metrics as printed), the tuner's summary, ncu's warnings"
    launches "$out/ncu-$v.csv"
    grep -E 'succeeded|failed:|cutile-perf: autotune|==WARNING==|==ERROR==' "$out/ncu-$v.out" "$out/ncu-$v.csv" 2> /dev/null | head -20
  done
} > "$out/SUMMARY.txt" 2>&1
cat "$out/SUMMARY.txt"
rm -rf "$work"
