#!/usr/bin/env bash
# On a GPU machine: setup that understands the kernel and the GPU watched at each run,
# in about five minutes. In fresh copies of a TileGym checkout (the checkout itself is not touched):
#   1. rms_norm: `start` with no --class (the GPU check, the plan, the static class and its source), `next`,
#      one step with an edit that changes nothing, and the evidence note with the GPU around each run;
#   2. matmul (two 4096^3 fp16 configs): `start` with no --class, and `next`.
# With Nsight Compute on PATH (or in /usr/local/cuda/bin), `start` measures each class. NO_STEP=1 skips the
# rms_norm step. Every command's output goes to OUT_DIR. Usage: tools/gpu-setup-check.sh /path/to/TileGym OUT_DIR
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: $0 /path/to/TileGym OUT_DIR" >&2; exit 2; }
tilegym="$(cd "$1" && pwd)"; mkdir -p "$2"; out="$(cd "$2" && pwd)"
tool="${CUTILE_PERF_TOOL:-$(cd "$(dirname "$0")/.." && pwd)/target/release/git-cutile-perf}"
[ -x "$tool" ] || { echo "build it first: cargo build --release" >&2; exit 2; }
command -v ncu > /dev/null || export PATH="$PATH:/usr/local/cuda/bin"
work="$(mktemp -d /tmp/gpu-setup.XXXXXX)"
export GIT_AUTHOR_NAME="${GIT_AUTHOR_NAME:-cutile-perf evidence}" GIT_AUTHOR_EMAIL="${GIT_AUTHOR_EMAIL:-evidence@localhost}"
export GIT_COMMITTER_NAME="$GIT_AUTHOR_NAME" GIT_COMMITTER_EMAIL="$GIT_AUTHOR_EMAIL"
# the session's src/ first on Python's path, so its code is what runs
base_pythonpath="${PYTHONPATH:-}"
timed() { local name=$1; shift; local t0=$SECONDS; "$@" > "$out/$name.out" 2> "$out/$name.err"; echo "$name: exit $? in $((SECONDS - t0)) s" | tee -a "$out/times.txt"; }

nvidia-smi > "$out/nvidia-smi.txt" 2>&1
for kernel in rms_norm matmul; do
  repo="$work/$kernel"; git clone -q "$tilegym" "$repo"; cd "$repo"
  export PYTHONPATH="$repo/src${base_pythonpath:+:$base_pythonpath}"
  case $kernel in
    rms_norm) timed start-rms_norm "$tool" start rms_norm --suite ops --json ;;
    matmul) timed start-matmul "$tool" start matmul --suite ops --json \
      --filter 'float16 and (False-False-False-4096-4096-4096 or True-True-False-False-4096-4096-4096 or 1024-1024-1024-0-0-False-False)' ;;
  esac
  timed "next-$kernel" "$tool" next
  timed "status-$kernel" "$tool" status
  git log -1 --format=%B > "$out/baseline-$kernel.txt"
  git notes --ref=cutile-perf show HEAD > "$out/baseline-note-$kernel.txt" 2>&1
  if [ $kernel = rms_norm ] && [ -z "${NO_STEP:-}" ]; then
    echo "# an edit that changes nothing" >> src/tilegym/ops/cutile/rms_norm.py
    timed step-rms_norm "$tool" step --opt none "a comment (changes nothing)" --json
    git notes --ref=cutile-perf show HEAD > "$out/step-note-rms_norm.txt" 2>&1
    git log -1 --format=%B > "$out/step-rms_norm.txt"
  fi
done
ls -l "$out"
