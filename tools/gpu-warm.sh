#!/usr/bin/env bash
# H200 evidence for warm workers (issue 27): steps whose paired rounds, correctness and unseen-input check
# run in one warm pytest worker per side, timed beside the cold costs they replace. Run from the repository
# root on the GPU machine after `source .gpu/device-setup.sh` (../shared/gpu/README.md):
#
#   tools/gpu-warm.sh OUT_DIR PART...
#
#   rms_norm  start from the de-optimized baseline (TMA on the static persistent store), the step that
#             restores it (keep), then a step that writes the gather kernel's output twice (revert)
#   rope      start on rope's microsecond configs (--filter "not 65536"), then 3 null edits
#
# Each command's stdout, stderr, exit code and wall time go to OUT_DIR (timings.txt); the progress lines in
# the .err files give each run's own time (correctness, each cold baseline run, each warm repetition).
set -uo pipefail
usage="usage: tools/gpu-warm.sh OUT_DIR rms_norm|rope..."
mkdir -p "${1:?$usage}"
out=$(cd "$1" && pwd)
shift
[ $# -gt 0 ] || { echo "$usage" >&2; exit 2; }
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

# a fresh repository of TileGym's sources under /tmp/warm-NAME, its src/ first on Python's path
fresh() {
    local repo=/tmp/warm-$1
    rm -rf "$repo"
    git clone -q "$TILEGYM" "$repo" && cd "$repo" || exit 1
    export PYTHONPATH="$repo/src:${PYTHONPATH#*:}"
}

# patch FILE OLD NEW: replace the first OLD (a literal) in FILE, or fail loudly
patch() {
    python3 - "$@" <<'PY' || exit 1
import sys
path, old, new = sys.argv[1:4]
text = open(path).read()
if old not in text:
    sys.exit(f"patch: {old!r} not in {path}")
open(path, "w").write(text.replace(old, new, 1))
PY
}

keep_record() {
    git log --format='%H%n%B' > "$out/$1-git-log.txt"
    git cutile-perf verify --json > "$out/$1-verify.json" 2>&1
    echo "$1 verify rc=$?" >> "$out/timings.txt"
    git cutile-perf table --write > /dev/null 2>&1 && cp sandbox/perf_results.md "$out/$1-perf_results.md"
}

for part in "$@"; do
case $part in
rms_norm)
    fresh rms_norm
    kernel=src/tilegym/ops/cutile/rms_norm.py
    cp "$kernel" /tmp/rms_norm.upstream.py
    patch "$kernel" "            allow_tma=False,  # +30% perf
" ""
    git commit -qam "de-optimized baseline: TMA on the static persistent store" --no-verify
    run rms_norm-start start rms_norm --suite ops --class memory --filter "static_persistent or multi_wave_reload" --json
    cp /tmp/rms_norm.upstream.py "$kernel"
    run rms_norm-keep step --json --opt F --cause memory "no TMA on the static persistent kernel's output store"
    patch "$kernel" "        ct.scatter(out, (row, offs), yj, latency=1)
" "        ct.scatter(out, (row, offs), yj, latency=1)
        ct.scatter(out, (row, offs), yj, latency=1)
"
    run rms_norm-revert step --json --cause memory "write the gather kernel's output twice"
    keep_record rms_norm
    ;;
rope)
    fresh rope
    run rope-start start rope --suite ops --class memory --filter "not 65536" --json
    for n in 1 2 3; do
        echo "# null edit $n" >> src/tilegym/ops/cutile/rope.py
        run rope-null-$n step --json --continue --cause memory "null edit $n (a comment)"
    done
    keep_record rope
    ;;
*)
    echo "$usage" >&2
    exit 2
    ;;
esac
done
