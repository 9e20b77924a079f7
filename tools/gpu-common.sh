# Shared by the GPU evidence scripts (`source "$(dirname "$0")/gpu-common.sh"; setup NAME "$@"`): their
# arguments, a fresh repository per kernel, a logged run of the tool and a literal patch of a file.

# setup NAME TILEGYM OUT_DIR [PYTHON]: sets tilegym, out, python, tool (the release build, or
# CUTILE_PERF_TOOL) and work (a temporary directory named after NAME); finds ncu in the CUDA toolkit when it
# is not on PATH.
setup() {
  local name="$1"; shift
  [ $# -ge 2 ] || { echo "usage: $0 /path/to/TileGym OUT_DIR [PYTHON]" >&2; exit 2; }
  tilegym="$(cd "$1" && pwd)"; mkdir -p "$2"; out="$(cd "$2" && pwd)"; python="${3:-python3}"
  tool="${CUTILE_PERF_TOOL:-$(cd "$(dirname "$0")/.." && pwd)/target/release/git-cutile-perf}"
  [ -x "$tool" ] || { echo "build it first: cargo build --release" >&2; exit 2; }
  command -v ncu > /dev/null || export PATH="$PATH:/usr/local/cuda/bin"
  work="$(mktemp -d "/tmp/$name.XXXXXX")"
}

export GIT_AUTHOR_NAME="${GIT_AUTHOR_NAME:-cutile-perf evidence}" GIT_AUTHOR_EMAIL="${GIT_AUTHOR_EMAIL:-evidence@localhost}"
export GIT_COMMITTER_NAME="$GIT_AUTHOR_NAME" GIT_COMMITTER_EMAIL="$GIT_AUTHOR_EMAIL"
base_pythonpath="${PYTHONPATH:-}"

# fresh NAME: a new repository with TileGym's sources and tests under $work; prints its path. Run the
# session in it with its src/ first on Python's path (`use_sources`), so the session's code is what runs,
# not an installed checkout.
fresh() {
  local repo="$work/$1"
  if [ -d "$tilegym/.git" ]; then
    git clone -q "$tilegym" "$repo"
  else
    mkdir -p "$repo"
    (cd "$tilegym" && tar cf - .) | (cd "$repo" && tar xf -)
    git -C "$repo" init -q -b main && git -C "$repo" add -A && git -C "$repo" commit -qm "TileGym" --no-verify
  fi
  echo "$repo"
}

use_sources() {
  export PYTHONPATH="$PWD/src${base_pythonpath:+:$base_pythonpath}"
}

# run NAME ARGS...: the tool in the current repository, its stdout, stderr, exit code and wall time kept
# in $out, with what diagnose and the compile facts left in sandbox/
run() {
  local name="$1"; shift
  local start rc
  start=$(date +%s%N)
  "$tool" "$@" > "$out/$name.out" 2> "$out/$name.err"
  rc=$?
  printf '%s rc=%s wall=%sms: git cutile-perf %s\n' "$name" "$rc" "$(( ($(date +%s%N) - start) / 1000000 ))" "$*" | tee -a "$out/timings.txt"
  cp -r sandbox/diagnose "$out/$name.ncu" 2> /dev/null
  cp -r sandbox/compile-facts "$out/$name.facts" 2> /dev/null
  return $rc
}

# patch FILE OLD NEW: replace the first OLD (a literal) in FILE, or fail loudly
patch() {
  "${python:-python3}" - "$@" <<'EOF' || exit 1
import sys
path, old, new = sys.argv[1:4]
text = open(path).read()
if old not in text:
    sys.exit(f"patch: {old!r} not in {path}")
open(path, "w").write(text.replace(old, new, 1))
EOF
}
