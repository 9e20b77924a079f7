#!/usr/bin/env bash
# Runs the tests N times in a row, 6 at once (as `.cargo/config.toml` has them), and reports how many runs
# passed and which tests failed how often: a test that fails now and then shows here, not in one CI run.
#
#   tools/soak.sh 20                          # the whole suite, 20 times (on 2 cores: over an hour)
#   tools/soak.sh 5 --test tests -- warm:: gpus::   # some modules; the arguments go to `cargo test`
#
# The build comes first, once; each run's output is kept under $SOAK_DIR (default: a new directory under
# the temporary one, printed), the failed runs' named in the report.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:?usage: tools/soak.sh RUNS [cargo test arguments...]}
shift
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "soak: RUNS must be a positive number, not \"$runs\"" >&2; exit 2; }
dir=${SOAK_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/soak.XXXXXX")}
mkdir -p "$dir"
export RUST_TEST_THREADS=6

cargo test --no-run "$@" >"$dir/build.log" 2>&1 || { cat "$dir/build.log" >&2; exit 1; }
passed=0
for run in $(seq 1 "$runs"); do
    log="$dir/run-$run.log"
    started=$SECONDS
    if cargo test "$@" >"$log" 2>&1; then
        passed=$((passed + 1))
        echo "soak: run $run passed in $((SECONDS - started)) s"
    else
        failed=$(sed -n 's/^test \(.*\) \.\.\. FAILED$/\1/p' "$log" | tr '\n' ' ')
        echo "soak: run $run FAILED in $((SECONDS - started)) s: ${failed:-(no test named: see $log)}"
    fi
done
echo "soak: $passed of $runs runs passed ($dir)"
if [ "$passed" -lt "$runs" ]; then
    echo "soak: failures by test:"
    sed -n 's/^test \(.*\) \.\.\. FAILED$/\1/p' "$dir"/run-*.log | sort | uniq -c | sort -rn
    exit 1
fi
