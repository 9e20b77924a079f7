#!/usr/bin/env bash
# GPU evidence for `start --scaffold` on kernels whose tests check correctness only: for each such kernel of
# one suite (`inspect --all --json`, class correctness_only), in a fresh copy of the checkout, `start
# --scaffold` writes sandbox/perf_<kernel>.py from the op's calls its correctness tests make, and `start
# --test` on that file, unedited, measures the baseline. Run on the GPU machine with TileGym's Python
# environment (torch, cuda-tile, pytest) and the release build:
#
#   tools/gpu-scaffold.sh /path/to/TileGym OUT_DIR [SUITE [PYTHON]]      # SUITE: liger (default), ops, ...
#
# A kernel takes one to three minutes (its correctness tests, the growths, the baseline); KERNELS="geglu
# layer_norm ..." runs only those of the suite's list, so that a suite can be run in parts into one OUT_DIR
# (the rows add up in summary.tsv).
#
# OUT_DIR/summary.tsv has a row per kernel: kernel, how it ended (started: a baseline without a hand edit;
# scaffold-refused or start-failed), the baseline's ms (and how many configs are launch-bound) or the failure's
# first error line, and the growths
# the scaffold kept. Each command's stdout, stderr, exit code and wall time are in OUT_DIR (timings.txt), with
# each scaffolded file (<kernel>.perf.py); OUT_DIR/count.txt says how many of how many started.
set -uo pipefail
source "$(dirname "$0")/gpu-common.sh"
[ $# -ge 2 ] || { echo "usage: $0 /path/to/TileGym OUT_DIR [SUITE [PYTHON]]" >&2; exit 2; }
suite="${3:-liger}"
setup scaffold "$1" "$2" "${4:-python3}"
export CUTILE_PERF_NO_PROGRESS=1
trap 'rm -rf "$work"' EXIT

nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader > "$out/gpu.txt" 2>&1
cd "$(fresh inspect)" || exit 1
use_sources
run inspect-all inspect --all --json
kernels=$(python3 -c '
import json, sys
report = json.load(open(sys.argv[1]))
print(" ".join(k["kernel"] for k in report["kernels"] if k["suite"] == sys.argv[2] and k["class"] == "correctness_only"))
' "$out/inspect-all.out" "$suite") || exit 1
echo "$suite: $(echo $kernels | wc -w) kernel(s) whose tests check correctness only: $kernels" | tee "$out/kernels.txt"
if [ -n "${KERNELS:-}" ]; then
    kernels=$(for kernel in $kernels; do case " $KERNELS " in *" $kernel "*) echo "$kernel" ;; esac; done)
fi

# field FILE EXPRESSION: a value of the JSON report in FILE (r), or nothing
field() {
    python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2" 2> /dev/null
}
# first_error NAME: the first line of a failed command's error, from its --json report or its stderr
first_error() {
    { field "$out/$1.out" 'r["error"].splitlines()[0]' || field "$out/$1.err" 'r["error"].splitlines()[0]' \
        || grep -m1 -i error "$out/$1.err"; } | tr '\t' ' ' | head -1
}

[ -f "$out/summary.tsv" ] || printf 'kernel\tended\tbaseline_ms_or_reason\tgrowths\n' > "$out/summary.tsv"
started=0
for kernel in $kernels; do
    cd "$(fresh "$kernel")" || exit 1
    use_sources
    if ! run "$kernel-scaffold" start "$kernel" --suite "$suite" --scaffold --python "$python" --json; then
        printf '%s\tscaffold-refused\t%s\t\n' "$kernel" "$(first_error "$kernel-scaffold")" >> "$out/summary.tsv"
        continue
    fi
    cp "sandbox/perf_$kernel.py" "$out/$kernel.perf.py"
    growths=$(field "$out/$kernel-scaffold.out" '" ".join(map(str, r["inputs"]["growths"]))')
    if run "$kernel-start" start "$kernel" --suite "$suite" --test "sandbox/perf_$kernel.py" --python "$python" --json; then
        started=$((started + 1))
        printf '%s\tstarted\t%s\t%s\n' "$kernel" "$(field "$out/$kernel-start.out" '"%.4f ms, %d launch-bound" % (r["latency_ms"], len(r["launch_bound"]))')" "$growths" >> "$out/summary.tsv"
    else
        printf '%s\tstart-failed\t%s\t%s\n' "$kernel" "$(first_error "$kernel-start")" "$growths" >> "$out/summary.tsv"
    fi
    # the session's warm workers end with it, and its GPU memory is free for the next kernel
    "$tool" repair > /dev/null 2>&1
done
echo "$started of $(echo $kernels | wc -w) $suite kernel(s) whose tests check correctness only started without a hand edit" | tee -a "$out/count.txt"
column -t -s $'\t' "$out/summary.tsv"
