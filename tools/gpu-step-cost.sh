#!/usr/bin/env bash
# GPU evidence for what a step costs against what it measures, on real TileGym, one GPU: for each of
# three sources, a session whose real step (the kernels' occupancy hint changed) runs at least 4 rounds
# where it can, a no-change step (a comment), and one cold run of the same file, measured the same day.
#
#   tools/gpu-step-cost.sh /path/to/TileGym OUT_DIR [PYTHON]
#
# Sources (PARTS, default "rms_norm softmax geglu null"):
#   rms_norm  test_perf: tests/ops/test_rms_norm.py, two static_persistent configs
#   softmax   a standalone benchmark: ops softmax through bench_softmax.py, five configs
#   geglu     a session perf file: liger geglu through the perf file `start --scaffold` writes, two configs
#   null      two no-change steps on rms_norm's session, one with the next round's workers started in
#             round 1 (today's) and one in round 2 (CUTILE_PERF_STAND_BY_FROM_ROUND=2): each one's change
#             and round-1 timings, whether a start-up beside round 1 moves what it measures
# Each session starts with thresholds of half a percent (`--gain-pct 0.5 --regression-pct 0.5
# --continue-pct 1`), so that a change of a few tenths of a percent takes several rounds, and each real
# step gets `--budget 100s`. OUT_DIR/costs.json holds one object per step: kernel, source, rounds, step_s,
# cold_run_s, correctness_s, measuring_s, startup_s (the start-ups the step waited for), census_s, and
# step_over_work (step_s / (correctness_s + measuring_s)); OUT_DIR/null.json the null comparison.
# Every command's output, exit code and wall time is in OUT_DIR (timings.txt). About 9 minutes of GPU.
# Needs the release build (cargo build --release).
set -uo pipefail
source "$(dirname "$0")/gpu-common.sh"
setup step-cost "$@"
export CUTILE_PERF_NO_PROGRESS=1
parts="${PARTS:-rms_norm softmax geglu null}"
thresholds=(--gain-pct 0.5 --regression-pct 0.5 --continue-pct 1)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/gpu.txt" 2>&1

# hint FILE: every cuTile kernel's occupancy hint in FILE changed (1 -> 2, else -> 1), or occupancy=2 added
hint() {
  "$python" - "$1" <<'EOF' || exit 1
import re, sys
path = sys.argv[1]

def changed(found):
    args = found.group("args")
    if args is None or not args.strip():
        return "@ct.kernel(occupancy=2)"
    now = re.search(r"occupancy\s*=\s*(\d+)", args)
    if now is None:
        return "@ct.kernel(occupancy=2, " + args + ")"
    new = "1" if now.group(1) != "1" else "2"
    return "@ct.kernel(" + re.sub(r"occupancy\s*=\s*\d+", f"occupancy={new}", args) + ")"

text, count = re.subn(r"@ct\.kernel(\((?P<args>[^)]*)\))?", changed, open(path).read())
if not count:
    sys.exit(f"hint: no @ct.kernel in {path}")
open(path, "w").write(text)
print(f"{path}: {count} kernels' occupancy hint changed")
EOF
}

# cold NAME TEST FILTER: one plain pytest run of the session's perf selection, its wall time in seconds
cold() {
  local start
  start=$(date +%s%N)
  "$python" -m pytest "$2" -k "test_perf and cutile${3:+ and ($3)}" -q -p no:cacheprovider \
    > "$out/$1-cold.out" 2>&1
  local rc=$? ms=$(( ($(date +%s%N) - start) / 1000000 ))
  echo "$1 cold rc=$rc wall=${ms}ms" >> "$out/timings.txt"
  printf '%d.%03d\n' $(( ms / 1000 )) $(( ms % 1000 )) > "$out/$1-cold.s"
}

# session NAME KERNEL_FILE TEST FILTER START_ARGS...: start, cold run, the real step, the no-change step
session() {
  local name="$1" kernel="$2" test="$3" filter="$4"; shift 4
  run "$name-start" start "$@" "${thresholds[@]}" --class memory --json || return 1
  cold "$name" "$test" "$filter"
  hint "$kernel" > "$out/$name-edit.txt"
  run "$name-step" step --json --opt none --cause memory --budget 100s "an occupancy hint"
  echo "# a comment: the same kernel" >> "$kernel"
  run "$name-nochange" step --json --continue --opt none "a comment only"
}

for part in $parts; do
  case "$part" in
    rms_norm)
      repo=$(fresh rms_norm) && cd "$repo" || exit 1
      use_sources
      filter="static_persistent and 65536"
      # the cold run times the perf cases alone; the session keeps every correctness test beside them
      session rms_norm src/tilegym/ops/cutile/rms_norm.py tests/ops/test_rms_norm.py "$filter" \
        rms_norm --suite ops --filter "($filter) or not test_perf"
      ;;
    softmax)
      repo=$(fresh softmax) && cd "$repo" || exit 1
      use_sources
      filter="bfloat16 and tma-False and chunked-False and multi-wave-False"
      run softmax-scaffold start softmax --suite ops --scaffold --json
      session softmax src/tilegym/ops/cutile/softmax.py sandbox/perf_softmax.py "$filter" \
        softmax --suite ops --test sandbox/perf_softmax.py --filter "$filter"
      ;;
    geglu)
      repo=$(fresh geglu) && cd "$repo" || exit 1
      use_sources
      run geglu-scaffold start geglu --suite liger --scaffold --json
      session geglu src/tilegym/suites/liger/cutile/geglu.py sandbox/perf_geglu.py "" \
        geglu --suite liger --test sandbox/perf_geglu.py
      ;;
    null)
      repo=$(fresh null) && cd "$repo" || exit 1
      use_sources
      filter="static_persistent and 65536"
      run null-start start rms_norm --suite ops --filter "($filter) or not test_perf" --class memory --json || continue
      echo "# a comment: the same kernel" >> src/tilegym/ops/cutile/rms_norm.py
      run null-round-1 step --json --continue --opt none "a comment, the next pair started in round 1"
      echo "# another comment" >> src/tilegym/ops/cutile/rms_norm.py
      CUTILE_PERF_STAND_BY_FROM_ROUND=2 \
        run null-round-2 step --json --continue --opt none "a comment, the next pair started in round 2"
      ;;
  esac
done

"$python" - "$out" <<'EOF'
import json, os, sys
out = sys.argv[1]
sources = {"rms_norm": "test_perf", "softmax": "benchmark", "geglu": "session_perf_file"}

def report(name):
    try:
        return json.load(open(os.path.join(out, f"{name}.out")))
    except (OSError, ValueError):
        return None

costs = []
for kernel, source in sources.items():
    try:
        cold_s = float(open(os.path.join(out, f"{kernel}-cold.s")).read())
    except (OSError, ValueError):
        cold_s = None
    for step in ("step", "nochange"):
        r = report(f"{kernel}-{step}")
        if not r or "timings" not in r:
            continue
        t = r["timings"]
        work = t["correctness_s"] + t["measuring_s"]
        costs.append({
            "kernel": kernel, "source": source, "step": step, "status": r["status"], "reason": r["reason"],
            "rounds": r["rounds"], "step_s": t["step_s"], "cold_run_s": cold_s,
            "correctness_s": t["correctness_s"], "measuring_s": t["measuring_s"],
            "startup_s": t["startup_waited_s"], "census_s": t["census_s"],
            "step_over_work": round(t["step_s"] / work, 2) if work else None,
            "timings": t,
        })
json.dump(costs, open(os.path.join(out, "costs.json"), "w"), indent=1)
null = {}
for name in ("null-round-1", "null-round-2"):
    r = report(name)
    if r:
        null[name] = {k: r.get(k) for k in ("status", "change_pct", "configs", "rounds", "timings")}
json.dump(null, open(os.path.join(out, "null.json"), "w"), indent=1)
for c in costs:
    print(f"{c['kernel']:9} {c['step']:9} rounds={c['rounds']} step={c['step_s']:.1f}s "
          f"cold={c['cold_run_s']} correctness={c['correctness_s']:.1f}s measuring={c['measuring_s']:.1f}s "
          f"startup={c['startup_s']:.1f}s census={c['census_s']:.1f}s x{c['step_over_work']}")
for name, r in null.items():
    print(name, r["change_pct"], [round(x["change_pct"], 3) for x in r["configs"] or []])
EOF
