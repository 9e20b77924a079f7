#!/usr/bin/env bash
# GPU evidence for campaigns: every kernel file of one TileGym suite in one campaign on one GPU, each
# session in its own worktree, with what each kernel's baseline took and what failed and why. Run on the
# GPU machine with TileGym's Python environment (torch, cuda-tile, pytest) and the release build:
#
#   tools/gpu-campaign.sh /path/to/TileGym OUT_DIR [SUITE] [PYTHON]
#
#   SUITE       liger (the default) or ops, as `inspect --all` names the suites
#   TIME_BOX    seconds the campaign may run (default 500); then it gets Ctrl-C, as a user would give it:
#               every session is whole or absent, and the kernels not reached stay queued
#   BUDGET      each baseline's time limit (default 3m)
#   KERNELS     only these kernels of the suite ("rope softmax ..."), as `campaign start` names them
#   JOBS        sessions started at once on the GPU (`campaign start --jobs`; default 1, one after
#               another): more of them reach a suite within TIME_BOX, but their baselines share the GPU
#               and its CPUs, so their times are not for comparing
#
# OUT_DIR gets: inspect.json (the suite's kernels and how each is measured), campaign.out/.err (the
# campaign's report and progress), status.json, verify.json, campaign.html, the logs of every kernel's
# start (logs/), timings.txt, and summary.md: one line per kernel (source, state, baseline, seconds, why
# it failed) and how many of the kernel files with a test started.
set -uo pipefail
source "$(dirname "$0")/gpu-common.sh"
suite="${3:-liger}"
setup campaign "$1" "$2" "${4:-python3}"
export CUTILE_PERF_NO_PROGRESS=1
cd "$(fresh "$suite")" || exit 1

run inspect inspect --all --json; cp "$out/inspect.out" "$out/inspect.json"
nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader > "$out/gpu.txt" 2>&1
workers=(--gpus 0)
[ "${JOBS:-1}" -gt 1 ] && workers=(--jobs "$JOBS")
began=$(date +%s)
selection=(--suite "$suite")
[ -n "${KERNELS:-}" ] && selection=($(for kernel in $KERNELS; do echo "$suite/$kernel"; done))
CUDA_VISIBLE_DEVICES=0 timeout -s INT "${TIME_BOX:-500}" "$tool" campaign start "${selection[@]}" "${workers[@]}" \
    --name "$suite" --python "$python" --budget "${BUDGET:-3m}" --json > "$out/campaign.out" 2> "$out/campaign.err"
echo "campaign start rc=$? wall=$(( $(date +%s) - began ))s: git cutile-perf campaign start ${selection[*]} ${workers[*]} --name $suite --python $python --budget ${BUDGET:-3m} --json" | tee -a "$out/timings.txt"
run status campaign status --name "$suite" --json; cp "$out/status.out" "$out/status.json"
run table campaign table --name "$suite"
run verify campaign verify --name "$suite" --json; cp "$out/verify.out" "$out/verify.json"
run report campaign report --name "$suite" --out "$out/campaign.html"
cp -r "$(git rev-parse --path-format=absolute --git-common-dir)/cutile-perf/campaigns/$suite/logs" "$out/logs" 2> /dev/null

python3 - "$out/status.json" "$(cat "$out/gpu.txt")" > "$out/summary.md" <<'EOF'
import json, sys
status = json.load(open(sys.argv[1]))
rows = status["kernels"]
print(f"# campaign {status['name']} on {sys.argv[2]}\n")
print("| kernel | source | state | baseline ms | seconds | why |")
print("|---|---|---|---|---|---|")
for r in rows:
    why = (r["reason"] or "").splitlines()[0] if r["reason"] else ""
    ms = f"{r['baseline_ms']:.4f}" if r["baseline_ms"] else "-"
    secs = f"{r['seconds']:.0f}" if r["seconds"] else "-"
    print(f"| {r['suite']}/{r['kernel']} | {r['source']} | {r['state']} | {ms} | {secs} | {why} |")
tested = [r for r in rows if r["source"] != "no_test"]
started = [r for r in tested if r["baseline_ms"]]
reached = [r for r in tested if r["state"] not in ("queued", "running")]
print(f"\n{len(rows)} kernel files, {len(tested)} with a test; {len(reached)} of those reached in the time box, "
      f"{len(started)} started without a hand edit"
      + (f" ({100 * len(started) / len(reached):.0f}% of those reached)" if reached else ""))
EOF
cat "$out/summary.md"
