#!/usr/bin/env bash
# H200 evidence for "a gain the kernel earned": the census on real TileGym, two shortcuts an agent might take
# refused with their reasons, and an honest gain still kept. Run from the repository root on the GPU machine
# with TileGym's Python environment (torch, cuda-tile, pytest) and the release build, part by part:
#
#   tools/gpu-integrity.sh OUT_DIR PART...
#
#   probe     the census plugin alone on one rms_norm perf case
#   rms_norm  start from a de-optimized baseline, then the step that restores TMA-less stores (keep)
#   memo      in that session: a memoized output with a one-element torch op (refused)
#   matmul    start; the registered wrapper returns a @ b for float inputs (refused)
#   reroll    in the rms_norm session: the same kernel with a comment added mid-file (no change after
#             one round, decided from the dumps of the workers' own runs)
#
# $TILEGYM is the TileGym checkout device-setup.sh made; OUT_DIR gets each command's output and timings.
set -uo pipefail
source "$(dirname "$0")/gpu-common.sh"
usage="usage: tools/gpu-integrity.sh OUT_DIR probe|rms_norm|memo|matmul|reroll..."
mkdir -p "${1:?$usage}"
out=$(cd "$1" && pwd)
shift
[ $# -gt 0 ] || { echo "$usage" >&2; exit 2; }
plugin_dir=$(cd "$(dirname "$0")/../src/census" && pwd)
export GIT_AUTHOR_NAME="cutile-perf evidence" GIT_AUTHOR_EMAIL="evidence@localhost"
export GIT_COMMITTER_NAME="$GIT_AUTHOR_NAME" GIT_COMMITTER_EMAIL="$GIT_AUTHOR_EMAIL"
export CUTILE_PERF_NO_PROGRESS=1

# run NAME ARGS...: the tool, its output and wall time kept in $out
run() {
    local name=$1 start rc
    shift
    start=$(date +%s%N)
    git cutile-perf "$@" > "$out/$name.out" 2> "$out/$name.err"
    rc=$?
    printf '%s rc=%s wall=%sms: git cutile-perf %s\n' "$name" "$rc" "$(( ($(date +%s%N) - start) / 1000000 ))" "$*" | tee -a "$out/timings.txt"
}

# a fresh repository of TileGym's sources under /tmp/integrity-NAME
fresh() {
    local repo=/tmp/integrity-$1
    rm -rf "$repo"
    git clone -q "$TILEGYM" "$repo" && cd "$repo" || exit 1
    export PYTHONPATH="$repo/src:${PYTHONPATH#*:}"
}

# the session part rms_norm made, when this machine ran it; else (a machine of its own) one on upstream's code
rms_norm_session() {
    if [ -d /tmp/integrity-rms_norm ]; then
        cd /tmp/integrity-rms_norm && export PYTHONPATH="$PWD/src:${PYTHONPATH#*:}"
    else
        fresh rms_norm
        run start start rms_norm --suite ops --class memory --filter "static_persistent or multi_wave_reload" --json
    fi
}

keep_record() {
    git log --format='%H%n%B' > "$out/$1-git-log.txt"
    git cutile-perf verify --json > "$out/$1-verify.json" 2>&1
    echo "verify rc=$?" >> "$out/timings.txt"
    git cutile-perf table --write > /dev/null 2>&1 && cp sandbox/perf_results.md "$out/$1-perf_results.md"
    mkdir -p "$out/$1-junit" && cp sandbox/*.xml sandbox/baseline/*.xml "$out/$1-junit/" 2>/dev/null
}

for part in "$@"; do
case $part in
probe)
    cd "$TILEGYM" || exit 1
    start=$(date +%s%N)
    PYTHONPATH="$plugin_dir:$PYTHONPATH" python3 -m pytest tests/ops/test_rms_norm.py -q -p no:cacheprovider \
        -p cutile_perf_census -k "test_perf and cutile and static_persistent and 4096 and 262144" \
        --junitxml="$out/probe.xml" > "$out/probe.log" 2>&1
    echo "probe rc=$? wall=$(( ($(date +%s%N) - start) / 1000000 ))ms" | tee -a "$out/timings.txt"
    python3 - "$out/probe.xml" <<'EOF'
import json, sys, xml.etree.ElementTree as ET
for prop in ET.parse(sys.argv[1]).iter("property"):
    if prop.get("name") == "cutile_perf_census":
        census = json.loads(prop.get("value"))
        print(json.dumps(census, indent=1)[:3000])
EOF
    ;;
rms_norm)
    fresh rms_norm
    kernel=src/tilegym/ops/cutile/rms_norm.py
    cp "$kernel" /tmp/rms_norm.upstream.py
    # the de-optimized baseline: TMA allowed again on the static persistent kernel's store
    patch "$kernel" "            allow_tma=False,  # +30% perf
" ""
    git commit -qam "de-optimized baseline: TMA on the static persistent store" --no-verify
    run start start rms_norm --suite ops --class memory --filter "static_persistent or multi_wave_reload" --json
    cp /tmp/rms_norm.upstream.py "$kernel"
    run step-1 step --json --opt F --cause memory "no TMA on the static persistent kernel's output store"
    keep_record rms_norm
    ;;
memo)
    kernel=src/tilegym/ops/cutile/rms_norm.py
    rms_norm_session
    # the shortcut: the registered wrapper remembers its output per input tensor (holding the tensors, so
    # that no other input can take their place) and launches one element of torch work so that the
    # harness sees a kernel
    patch "$kernel" '@register_impl("rms_norm", backend="cutile")' '_MEMO = {}


@register_impl("rms_norm", backend="cutile")'
    patch "$kernel" '    return _RMSNorm.apply(input, normalized_shape, weight, eps, bias, mode, offset)' '    key = (id(input), id(weight), mode)
    hit = _MEMO.get(key)
    if hit is None or hit[0] is not input or hit[1] is not weight:
        hit = (input, weight, _RMSNorm.apply(input, normalized_shape, weight, eps, bias, mode, offset))
        _MEMO[key] = hit
    torch.empty(1, device=input.device).fill_(0)
    return hit[2]'
    run step-2 step --opt none --json --cause memory "remember the output per input tensor"
    keep_record memo
    ;;
matmul)
    fresh matmul
    kernel=src/tilegym/ops/cutile/matmul.py
    run start start matmul --suite ops --class compute --budget 9m --json \
        --filter "float16 and (False-False-False-4096-4096-4096 or True-True-False-False-4096-4096-4096 or 1024-1024-1024-0-0-False-False)"
    # the shortcut: cuBLAS through torch for float inputs instead of the cuTile kernel
    patch "$kernel" '    if static_persistent is None:
        static_persistent = False
' '    if static_persistent is None:
        static_persistent = False
    if a.dtype in (torch.float16, torch.bfloat16, torch.float32):
        return (a.t() if trans_a else a) @ (b.t() if trans_b else b)
'
    run step-1 step --opt none --json --budget 9m --cause compute "let cuBLAS do the float cases"
    keep_record matmul
    ;;
reroll)
    kernel=src/tilegym/ops/cutile/rms_norm.py
    rms_norm_session
    # no re-roll: a comment mid-file moves the code down a line and changes nothing the GPU runs
    patch "$kernel" '@register_impl("rms_norm", backend="cutile")' '# the same kernel, stepped again
@register_impl("rms_norm", backend="cutile")'
    run step-reroll step --opt none --json --cause memory "the same kernel with a comment added"
    keep_record reroll
    # the check's evidence without the IR itself: each side's dump files (named by tree) and their hashes,
    # and what the step says it found and what its checks cost
    (cd sandbox/dumps && find . -type f -exec sha1sum {} + | sort -k2) > "$out/reroll-dumps.txt"
    python3 -c 'import json, sys; print(json.dumps(json.load(open(sys.argv[1]))["checks"], indent=1))' \
        "$out/step-reroll.out" > "$out/reroll-checks.json" 2>&1
    ;;
*)
    echo "$usage" >&2
    exit 2
    ;;
esac
done
