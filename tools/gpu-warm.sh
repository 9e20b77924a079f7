#!/usr/bin/env bash
# H200 evidence for warm workers: steps whose paired rounds, correctness and unseen-input check
# run in one warm pytest worker per side, timed beside the cold costs they replace. Run on the GPU machine
# with TileGym's Python environment (torch, cuda-tile, pytest) and the release build:
#
#   tools/gpu-warm.sh /path/to/TileGym OUT_DIR PART...
#
#   rms_norm  start from the de-optimized baseline (TMA on the static persistent store), the step that
#             restores it (keep), a step that writes the gather kernel's output twice (revert), then a
#             comment-only step (no change: no re-roll)
#   rope      start on rope's microsecond configs (--filter "not 65536"), then 3 null edits that change
#             the compiled kernel but not what it does (an index by subtraction, two sums' terms swapped)
#   rope-mean the same, the decisions on each config's mean (--stat mean): medians of microsecond kernels
#             move in whole 32 ns ticks of the GPU timer, 2% of rope's fastest configs
#   rope-mean-2 the same from null edit 1 committed as the baseline: null edits 2 and 3 only
#   rope-mean-3 the same from null edits 1 and 2 committed as the baseline: null edit 3 only
#   rope-swap null edit 1 with the roles swapped (the edited code as the baseline, the step undoes it), with
#             --stat mean: whether the slow state of `evidence/2026-12-04-h200-rope/2026-12-03-standby/` follows the
#             candidate's role or its code
#   attention start on the autotuned float16 grid (--filter "not bfloat16 and not float8", 18 configs, each
#             tuned by exhaustive_search on its first call), a null edit that changes the compiled kernel
#             (the head index by subtraction), then a real change (the tuned kernel launched twice:
#             the same output for twice the work), whose baseline worker is the null step's
#
# Each command's stdout, stderr, exit code and wall time go to OUT_DIR (timings.txt); the progress lines in
# the .err files give each run's own time (correctness, each cold baseline run, each warm command).
set -uo pipefail
source "$(dirname "$0")/gpu-common.sh"
[ $# -ge 3 ] || { echo "usage: $0 /path/to/TileGym OUT_DIR rms_norm|rope..." >&2; exit 2; }
setup warm "$1" "$2"
shift 2
export CUTILE_PERF_NO_PROGRESS=1

# edit FILE OLD NEW: replace the first OLD (a literal) in FILE, or fail loudly
edit() {
    python3 -c 'import sys; p, o, n = sys.argv[1:4]; t = open(p).read(); o in t or sys.exit(f"{o!r} not in {p}"); open(p, "w").write(t.replace(o, n, 1))' "$@" || exit 1
}

for part in "$@"; do
    cd "$(fresh "$part")" || exit 1
    use_sources
    case $part in
    rms_norm)
        kernel=src/tilegym/ops/cutile/rms_norm.py
        cp "$kernel" "$work/rms_norm.upstream.py"
        edit "$kernel" "            allow_tma=False,  # +30% perf
" ""
        git commit -qam "de-optimized baseline: TMA on the static persistent store" --no-verify
        run rms_norm-start start rms_norm --suite ops --class memory --filter "static_persistent or multi_wave_reload" --json
        cp "$work/rms_norm.upstream.py" "$kernel"
        run rms_norm-keep step --json --opt F --cause memory "no TMA on the static persistent kernel's output store"
        scatter="        ct.scatter(out, (row, offs), yj, latency=1)
"
        edit "$kernel" "$scatter" "$scatter$scatter"
        run rms_norm-revert step --opt none --json --cause memory "write the gather kernel's output twice"
        # no re-roll: a comment above the registered wrapper moves the code down and changes nothing the
        # GPU runs; the dumps the rounds wrote, by tree, show what the check compared
        edit "$kernel" '@register_impl("rms_norm", backend="cutile")' '# the same kernel, stepped again
@register_impl("rms_norm", backend="cutile")'
        run rms_norm-reroll step --opt none --json --continue --cause memory "the same kernel with a comment added"
        (cd sandbox/dumps && find . -type f -exec sha1sum {} + | sort -k2) > "$out/rms_norm-reroll-dumps.txt"
        ;;
    rope|rope-mean|rope-mean-2|rope-mean-3)
        kernel=src/tilegym/ops/cutile/rope.py
        statistic=median
        [ "$part" != rope ] && statistic=mean
        # each edit changes the compiled kernel (a comment alone is "no change" now) but not its speed
        if [ "$part" = rope-mean-3 ]; then
            edit "$kernel" "bid % SEQ_LEN" "bid - batch_idx * SEQ_LEN"
            edit "$kernel" "q_tile_2 * cos_row + q_tile_1 * sin_row" "q_tile_1 * sin_row + q_tile_2 * cos_row"
            git commit -qam "baseline: null edits 1 and 2" --no-verify
            run "$part-start" start rope --suite ops --class memory --filter "not 65536" --stat $statistic --json
        elif [ "$part" = rope-mean-2 ]; then
            edit "$kernel" "bid % SEQ_LEN" "bid - batch_idx * SEQ_LEN"
            git commit -qam "baseline: null edit 1 (the row index by subtraction)" --no-verify
            run "$part-start" start rope --suite ops --class memory --filter "not 65536" --stat $statistic --json
        else
            run "$part-start" start rope --suite ops --class memory --filter "not 65536" --stat $statistic --json
            edit "$kernel" "bid % SEQ_LEN" "bid - batch_idx * SEQ_LEN"
            run "$part-null-1" step --opt none --json --continue --cause memory "null edit 1: the row index by subtraction"
        fi
        if [ "$part" != rope-mean-3 ]; then
            edit "$kernel" "q_tile_2 * cos_row + q_tile_1 * sin_row" "q_tile_1 * sin_row + q_tile_2 * cos_row"
            run "$part-null-2" step --opt none --json --continue --cause memory "null edit 2: the q sum's terms swapped"
        fi
        edit "$kernel" "k_tile_2 * cos_row + k_tile_1 * sin_row" "k_tile_1 * sin_row + k_tile_2 * cos_row"
        run "$part-null-3" step --opt none --json --continue --cause memory "null edit 3: the k sum's terms swapped"
        ;;
    rope-swap)
        # null edit 1 with the roles swapped: the edited code is the session's baseline and the step puts
        # the upstream code back. A state that follows the candidate's role, not its code, is the tool's.
        kernel=src/tilegym/ops/cutile/rope.py
        cp "$kernel" "$work/rope.upstream.py"
        edit "$kernel" "bid % SEQ_LEN" "bid - batch_idx * SEQ_LEN"
        git commit -qam "baseline: the row index by subtraction (null edit 1)" --no-verify
        run "$part-start" start rope --suite ops --class memory --filter "not 65536" --stat mean --json
        cp "$work/rope.upstream.py" "$kernel"
        run "$part-null" step --opt none --json --continue --cause memory "null edit 1 undone: the row index by modulo"
        ;;
    attention)
        kernel=src/tilegym/ops/cutile/attention.py
        # two cold benchmark runs of a tuning kernel: more than the default budget of 10 minutes
        run attention-start start attention --suite ops --class compute --filter "not bfloat16 and not float8" --budget 15m --json
        edit "$kernel" "    head_idx = bid_y % H
" "    head_idx = bid_y - batch_idx * H
"
        run attention-null step --opt none --json --cause compute "null edit: the head index by subtraction"
        # a line at the else branch's depth before the wrapper's return: the tuned launch again
        edit "$kernel" "    return o


def _tile_prefill_fmha" "        ct.launch(stream, (math.ceil(q_len / best_cfg.TILE_M), batch_size * num_heads, 1), tuned_kernel, (q, k, v, o, sm_scale, input_pos, hidden_size, num_heads, best_cfg.TILE_M, best_cfg.TILE_N, query_group_size, is_causal, EVEN_K))
    return o


def _tile_prefill_fmha"
        run attention-twice step --opt none --json --continue --cause compute "launch the tuned kernel twice"
        ;;
    *)
        echo "unknown part $part" >&2
        exit 2
        ;;
    esac
    git log --format='%H%n%B' > "$out/$part-git-log.txt"
    # the evidence notes hold every run's records (`tools/evidence_junit.py` writes them out as JUnit files)
    git log --notes=cutile-perf --format='%H%n%N' > "$out/$part-notes.txt"
    run "$part-verify" verify --json
done
