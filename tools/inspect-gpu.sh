#!/usr/bin/env bash
# On a GPU machine: `inspect` on rms_norm, matmul, softmax and one flashinfer GEMM of a TileGym
# checkout, and the measured class (Nsight Compute) of rms_norm and matmul. Writes one file per run
# into OUT_DIR. Usage: tools/inspect-gpu.sh /path/to/TileGym OUT_DIR [PYTHON]
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: $0 /path/to/TileGym OUT_DIR [PYTHON]" >&2; exit 2; }
tilegym="$(cd "$1" && pwd)"; mkdir -p "$2"; out="$(cd "$2" && pwd)"; python="${3:-python3}"
tool="$(cd "$(dirname "$0")/.." && pwd)/target/release/git-cutile-perf"
[ -x "$tool" ] || { echo "build it first: cargo build --release" >&2; exit 2; }
cd "$tilegym"
nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader > "$out/gpu.txt" 2>&1
ncu --version > "$out/ncu-version.txt" 2>&1
ncu --query-metrics 2>&1 | grep -E '^(dram__bytes|gpu__time_duration|sm__ops_path_tensor|sm__sass_thread_inst_executed_op_[fh](add|mul|fma)_pred_on) ' > "$out/ncu-metrics.txt"
for k in "rms_norm --suite ops" "matmul --suite ops" "softmax --suite ops" "gemm_alpha_beta --suite flashinfer"; do
  name="${k%% *}"
  "$tool" inspect $k > "$out/inspect-$name.txt" 2>&1
  "$tool" inspect $k --json > "$out/inspect-$name.json" 2> "$out/inspect-$name.err"
done
for k in "rms_norm --suite ops" "matmul --suite ops"; do
  name="${k%% *}"
  "$tool" inspect $k --measure --python "$python" --json > "$out/measure-$name.json" 2> "$out/measure-$name.err"
  echo "measure $name: exit $?"
  cp sandbox/ncu.log "$out/ncu-$name.log" 2>/dev/null; cp sandbox/ncu.csv "$out/ncu-$name.csv" 2>/dev/null
done
ls -l "$out"
