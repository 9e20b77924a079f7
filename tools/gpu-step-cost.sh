#!/usr/bin/env bash
# GPU evidence for what a step costs against what it measures, on real TileGym, one GPU: for each of
# three sources, a session whose no-change step (a comment) comes first and whose real step (the kernels'
# occupancy hint changed; rms_norm's output store's latency hint) runs at least 4 rounds
# where it can, and one cold run of the same file, measured the same day. Why a spare started its
# worker afresh is in each step's report (`timings.startups[].phases.afresh`).
#
#   tools/gpu-step-cost.sh /path/to/TileGym OUT_DIR [PYTHON]
#
# Parts (PARTS, default "softmax null geglu rms_norm", run in that order):
#   softmax   a standalone benchmark: ops softmax through bench_softmax.py, five configs
#   null      no-change steps on softmax's session (started here if the softmax part did not run), one
#             for each entry of NULL_RUNS (default "- $FEW -", where FEW is the start-up settings of a
#             machine with few CPUs: the defaults against those, twice). An entry is the step's settings,
#             comma-separated VAR=VALUE, `-` for the defaults (docs/measurement.md). Each is measured past
#             its first round (CUTILE_PERF_REROLL_ALIKE=1) within NULL_BUDGET (default 90s), so that the
#             rounds the settings change are measured (spares topped up as the rounds begin against only
#             after the step: NULL_RUNS="CUTILE_PERF_REFILL_SPARES=1 CUTILE_PERF_REFILL_SPARES=0");
#             null.json then has each round's waited_s (what a setting saves), correctness_s and the
#             workers' startups with their phases (what it costs them), and each round's
#             candidate_over_baseline_pct (whether it moves what a round measures)
#   geglu     a session perf file: liger geglu through the perf file `start --scaffold` writes, two configs
#   rms_norm  test_perf: tests/ops/test_rms_norm.py, two static_persistent configs
# Each session starts with thresholds of half a percent (`--gain-pct 0.5 --regression-pct 0.5
# --continue-pct 1`), so that a change of a few tenths of a percent takes several rounds (rms_norm's,
# whose test_perf timing tells a tenth of a percent in one round, of 0.15%: RMS_NORM_PCT), and each real
# step gets `--budget $STEP_BUDGET` (default 100s; rms_norm's, whose correctness tests take 15-20 s,
# RMS_NORM_BUDGET, default STEP_BUDGET); the no-change step starts STEP_GAP seconds (default 0) after
# `start` and the cold run, and the real step as long after it: the time a user or agent takes to make
# the next change, in which the spares get ready; and (unless NO_SPARE_TOO=0) as long after that, a second no-change step with
# CUTILE_PERF_SPARES=0, which ends the spares the real step left (their environment differs) and starts
# its candidate's worker afresh. OUT_DIR/costs.json holds one object per step: kernel, source, rounds, step_s,
# cold_run_s, correctness_s, measuring_s, startup_s (the start-ups the step waited for), census_s, and
# step_over_work (step_s / (correctness_s + measuring_s)); OUT_DIR/null.json one object per null step:
# its settings, verdict, change and rounds, and for each round the start-up it waited for, each side's
# measuring seconds and mean of its configs' means (from the evidence notes). Both are written again
# after each step, so a run cut short keeps what it finished. Every command's output, exit code and wall
# time is in OUT_DIR (timings.txt). PARTS="softmax rms_norm geglu" STEP_BUDGET=75s fits 9 minutes of an
# H100; COLD=0 leaves out the cold runs (their cold_run_s is then null).
# Needs the release build (cargo build --release).
set -uo pipefail
source "$(dirname "$0")/gpu-common.sh"
setup step-cost "$@"
export CUTILE_PERF_NO_PROGRESS=1
parts="${PARTS:-softmax null geglu rms_norm}"
few=CUTILE_PERF_STAND_BY_FROM_ROUND=1,CUTILE_PERF_STAND_BY_ROUNDS=1,CUTILE_PERF_STAND_BY_AT_ONCE=0
null_runs="${NULL_RUNS:-- $few - $few}"
null_budget="${NULL_BUDGET:-90s}"
step_budget="${STEP_BUDGET:-100s}"
rms_norm_pct="${RMS_NORM_PCT:-0.15}"
rms_norm_budget="${RMS_NORM_BUDGET:-$step_budget}"
step_gap="${STEP_GAP:-0}"
no_spare_too="${NO_SPARE_TOO:-1}"
here="$(cd "$(dirname "$0")" && pwd)"
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
  [ "${COLD:-1}" = 1 ] || return 0
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
  session_steps "$name" "$kernel" "$test" "$filter"
}

# session_steps NAME KERNEL_FILE TEST FILTER: in a started session, the cold run, the real step and the
# no-change step (the summary written after each step: `timeout` may end the script at any command)
session_steps() {
  local name="$1" kernel="$2" test="$3" filter="$4"
  cold "$name" "$test" "$filter"
  # the no-change step first: a real step that keeps a gain below --continue-pct halts the loop, which
  # ends the workers a step after it would have found up
  sleep "$step_gap"
  echo "# a comment: the same kernel" >> "$kernel"
  run "$name-nochange" step --json --opt none "a comment only"
  summarize
  sleep "$step_gap"
  local what="an occupancy hint"
  if [ "$name" = rms_norm ]; then
    # its occupancy hint makes it a third slower, decided in one round: its output store's latency hint
    # instead, a change of a fraction of a percent that takes rounds to tell
    what="the output store's latency hint 3 -> 4"
    sed -i 's/            latency=3,  # +3% perf from this hint/            latency=4,  # +3% perf from this hint/' "$kernel"
    git diff --stat -- "$kernel" > "$out/$name-edit.txt"
  else
    hint "$kernel" > "$out/$name-edit.txt"
  fi
  local budget="$step_budget"
  [ "$name" = rms_norm ] && budget="$rms_norm_budget"
  run "$name-step" step --json --continue --opt none --cause memory --budget "$budget" "$what"
  [ "$no_spare_too" = 1 ] || return 0
  summarize
  sleep "$step_gap"
  echo "# another comment: the same kernel" >> "$kernel"
  CUTILE_PERF_SPARES=0 run "$name-nochange-nospare" step --json --continue --opt none "another comment"
}

softmax_filter="bfloat16 and tma-False and chunked-False and multi-wave-False"

# softmax_start: softmax's scaffolded perf file and its session, in a fresh repository (the current one)
softmax_start() {
  run softmax-scaffold start softmax --suite ops --scaffold --json || return 1
  run softmax-start start softmax --suite ops --test sandbox/perf_softmax.py --filter "$softmax_filter" \
    "${thresholds[@]}" --class memory --json
}

# null_steps: one no-change step on softmax's session for each entry of NULL_RUNS, its evidence notes kept
# and the summary written after each
null_steps() {
  local i=0 entry
  for entry in $null_runs; do
    i=$((i + 1))
    echo "# null step $i: the same kernel" >> src/tilegym/ops/cutile/softmax.py
    echo "$entry" > "$out/null-$i.settings"
    (
      export CUTILE_PERF_REROLL_ALIKE=1
      IFS=, read -ra settings <<< "$entry"
      for setting in "${settings[@]}"; do
        [ "$setting" = - ] || export "${setting?}"
      done
      run "null-$i" step --json --continue --opt none --budget "$null_budget" "a comment, settings $entry"
    )
    git log --notes=cutile-perf --format='%H%n%N' > "$out/null-notes.txt"
    summarize
  done
}

# summarize: OUT_DIR/costs.json and OUT_DIR/null.json from what the parts left so far
summarize() {
  [ -f "$out/null-notes.txt" ] &&
    "$python" "$here/evidence_junit.py" "$out/null-notes.txt" "$out/null-runs" > /dev/null
  "$python" - "$out" <<'EOF'
import ast, glob, html, json, os, re, sys
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
    for step in ("step", "nochange", "nochange-nospare"):
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


def means(leaf, found, key="mean"):
    """Every number keyed `key` in one benchmark record."""
    if isinstance(leaf, dict):
        for name, value in leaf.items():
            if name == key and isinstance(value, (int, float)):
                found.append(value)
            else:
                means(value, found, key)
    return found


def round_mean(iteration, number, side):
    """The mean of the configs' means, or medians where a record has no mean (cutile's, where the record
    names it), of one side's run in one round of a step's evidence, in ms."""
    try:
        text = open(os.path.join(out, "null-runs", f"{iteration:02d}-round-{number}-{side}.xml")).read()
    except OSError:
        return None
    values = []
    for case in re.finditer(r"<testcase[^>]*>(.*?)</testcase>", text, re.S):
        prop = re.search(r'property name="benchmark" value="([^"]*)"', case.group(1))
        if prop:
            record = ast.literal_eval(html.unescape(prop.group(1)))
            leaf = record.get("cutile", record) if isinstance(record, dict) else record
            # a harness that records only a median (do_bench's) is read by it
            values += means(leaf, []) or means(leaf, [], "median")
    return sum(values) / len(values) if values else None


null = []
names = [os.path.basename(p)[:-len(".settings")] for p in glob.glob(os.path.join(out, "null-*.settings"))]
for name in sorted(names, key=lambda n: int(n.split("-")[1])):
    r = report(name)
    if not r:
        continue
    t = r.get("timings") or {}
    rounds = []
    for i, times in enumerate(t.get("rounds", []), 1):
        c = round_mean(r.get("iteration") or 0, i, "candidate")
        b = round_mean(r.get("iteration") or 0, i, "baseline")
        rounds.append({
            "round": times["round"], "waited_s": times["waited_s"],
            "candidate_s": times["candidate_s"], "baseline_s": times["baseline_s"],
            "candidate_mean_ms": c, "baseline_mean_ms": b,
            "candidate_over_baseline_pct": round(100 * (c / b - 1), 3) if c and b else None,
        })
    null.append({
        "step": name, "settings": open(os.path.join(out, f"{name}.settings")).read().strip(),
        "status": r.get("status"), "reason": r.get("reason"), "change_pct": r.get("change_pct"),
        "rounds": r.get("rounds"), "step_s": t.get("step_s"), "startup_waited_s": t.get("startup_waited_s"),
        "correctness_s": t.get("correctness_s"), "measuring_s": t.get("measuring_s"),
        "startups": t.get("startups"), "started_unused": t.get("started_unused"), "per_round": rounds,
    })
json.dump(null, open(os.path.join(out, "null.json"), "w"), indent=1)
for c in costs:
    print(f"{c['kernel']:9} {c['step']:9} rounds={c['rounds']} step={c['step_s']:.1f}s "
          f"cold={c['cold_run_s']} correctness={c['correctness_s']:.1f}s measuring={c['measuring_s']:.1f}s "
          f"startup={c['startup_s']:.1f}s census={c['census_s']:.1f}s x{c['step_over_work']}")
for n in null:
    print(n["step"], n["settings"], n["status"], n["change_pct"], "rounds", n["rounds"],
          "waited", [round(x["waited_s"], 1) for x in n["per_round"]],
          "candidate/baseline %", [x["candidate_over_baseline_pct"] for x in n["per_round"]])
EOF
}

for part in $parts; do
  case "$part" in
    softmax)
      repo=$(fresh softmax) && cd "$repo" || exit 1
      use_sources
      softmax_start &&
        session_steps softmax src/tilegym/ops/cutile/softmax.py sandbox/perf_softmax.py "$softmax_filter"
      ;;
    null)
      if [ -d "$work/softmax" ]; then
        cd "$work/softmax" || exit 1
        use_sources
      else
        repo=$(fresh softmax) && cd "$repo" || exit 1
        use_sources
        softmax_start || continue
      fi
      null_steps
      ;;
    geglu)
      repo=$(fresh geglu) && cd "$repo" || exit 1
      use_sources
      run geglu-scaffold start geglu --suite liger --scaffold --json
      session geglu src/tilegym/suites/liger/cutile/geglu.py sandbox/perf_geglu.py "" \
        geglu --suite liger --test sandbox/perf_geglu.py
      ;;
    rms_norm)
      repo=$(fresh rms_norm) && cd "$repo" || exit 1
      use_sources
      filter="static_persistent and 65536"
      # the cold run times the perf cases alone; the session keeps every correctness test beside them
      thresholds=(--gain-pct "$rms_norm_pct" --regression-pct "$rms_norm_pct" --continue-pct 1)
      session rms_norm src/tilegym/ops/cutile/rms_norm.py tests/ops/test_rms_norm.py "$filter" \
        rms_norm --suite ops --filter "($filter) or not test_perf"
      ;;
    *)
      echo "unknown part $part" >&2
      exit 2
      ;;
  esac
  summarize
done
