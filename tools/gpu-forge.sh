#!/usr/bin/env bash
# GPU evidence for "a gain nothing in the process can forge", on real TileGym's rms_norm. One session starts
# from a de-optimized baseline (TMA allowed again on the static persistent kernel's store); each forged step
# rides the honest fix (no TMA there), so that without the checks it would be kept; then the honest fix
# alone is kept. A second session shows a kept worker ended when a library it imported changed.
#
#   tools/gpu-forge.sh /path/to/TileGym OUT_DIR [PYTHON]
#
# Parts, in order, each with its output, exit code and wall time in OUT_DIR (timings.txt):
#   harness  the fix, and the kernel's module halving what tests.common.benchmark returns (refused: the
#            harness was replaced after its import)
#   fresh    the fix, and a wrapper that returns the output of the first timed call after an untimed one on
#            the harness's later calls (refused: the timed call on fresh input values returned another output)
#   honest   the fix alone (kept); its `checks` are the checks' cost
#   worker   a session whose kernel imports a library outside the checkout (each call sleeps on the GPU in
#            its first version); the library upgraded (no sleep) between two comment-only steps: the kept
#            baseline worker is ended, naming the file, and the step is no gain
# After each: verify --json, the git log with trailers. Needs the release build (cargo build --release).
set -uo pipefail
source "$(dirname "$0")/gpu-common.sh"
setup forge "$@"
export CUTILE_PERF_NO_PROGRESS=1
kernel=src/tilegym/ops/cutile/rms_norm.py
filter="static_persistent or multi_wave_reload"

# record NAME: what verify says of the session, its log with trailers, and the last step's checks
record() {
  "$tool" verify --json > "$out/$1-verify.json" 2>&1
  echo "$1 verify rc=$?" >> "$out/timings.txt"
  git log --format='%H%n%B' > "$out/$1-git-log.txt"
  "$python" -c 'import json, sys; r = json.load(open(sys.argv[1])); print(json.dumps({k: r.get(k) for k in ("status", "reason", "change_pct", "checks")}, indent=1))' \
    "$out/$1.out" > "$out/$1-summary.json" 2>&1
}

# the honest fix: no TMA on the static persistent kernel's output store, as upstream has it
honest_fix() {
  cp "$work/rms_norm.upstream.py" "$kernel"
}

repo=$(fresh rms_norm) && cd "$repo" || exit 1
use_sources
cp "$kernel" "$work/rms_norm.upstream.py"
patch "$kernel" "            allow_tma=False,  # +30% perf
" ""
git commit -qam "de-optimized baseline: TMA on the static persistent store" --no-verify
run start start rms_norm --suite ops --class memory --filter "$filter" --json
record start

# 1. the harness's number rewritten by the kernel's module at import
honest_fix
cat >> "$kernel" <<'EOF'


import tests.common as _harness

_benchmark = _harness.benchmark


def _halved(value):
    if isinstance(value, float):
        return value * 0.5
    if isinstance(value, dict):
        return {key: _halved(inner) for key, inner in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_halved(inner) for inner in value)
    return value


_harness.benchmark = lambda *args, **kwargs: _halved(_benchmark(*args, **kwargs))
EOF
run harness step --opt F --cause memory --json "no TMA on the output store, and a faster harness"
record harness

# 2. a stale right answer returned on timed calls after the first
honest_fix
patch "$kernel" '    return _RMSNorm.apply(input, normalized_shape, weight, eps, bias, mode, offset)' '    out = _RMSNorm.apply(input, normalized_shape, weight, eps, bias, mode, offset)
    key = (input.data_ptr(), tuple(input.shape), str(mode))
    timed = _in_harness()
    if timed and not _EVERY[0] and key in _KEPT:
        return _KEPT[key]
    _EVERY[0] = not timed
    _KEPT[key] = out
    return out'
patch "$kernel" '@register_impl("rms_norm", backend="cutile")' '_KEPT = {}
_EVERY = [True]


def _in_harness():
    import sys

    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name in ("benchmark", "do_bench"):
            return True
        frame = frame.f_back
    return False


@register_impl("rms_norm", backend="cutile")'
run fresh step --opt F --cause memory --json "no TMA on the output store, and a kept output while timed"
record fresh

# 3. the honest fix alone
honest_fix
run honest step --opt F --cause memory --continue --json "no TMA on the static persistent kernel's output store"
record honest

# 4. a kept worker whose imported library changed on disk
library="$work/library"
mkdir -p "$library"
printf 'import torch\n\n\ndef before():\n    torch.cuda._sleep(200000)\n' > "$library/forge_library.py"
repo=$(fresh worker) && cd "$repo" || exit 1
use_sources
export PYTHONPATH="$library:$PYTHONPATH"
patch "$kernel" '    return _RMSNorm.apply(input, normalized_shape, weight, eps, bias, mode, offset)' '    import forge_library

    forge_library.before()
    return _RMSNorm.apply(input, normalized_shape, weight, eps, bias, mode, offset)'
git commit -qam "the kernel calls a library outside the checkout" --no-verify
run worker-start start rms_norm --suite ops --class memory --filter "$filter" --json
echo "# a comment" >> "$kernel"
run worker-1 step --opt none --json "a comment: the baseline's worker is kept after it"
# the library upgraded: no sleep any more
printf 'def before():\n    pass\n' > "$library/forge_library.py"
echo "# another comment" >> "$kernel"
run worker step --opt none --json "another comment, after the library's upgrade"
grep -h "kept worker" "$out/worker.err" > "$out/worker-ended.txt"
record worker
echo "evidence in $out"
