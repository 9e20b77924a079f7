#!/usr/bin/env bash
# One turn of an agent session on the GPU machine: the agent (here, with the skill) writes the commands of its
# turn into a file, and this runs them in the session's TileGym checkout, then saves that checkout so the next
# turn continues it even on a fresh machine. Run from the repository root on the GPU machine:
#
#   tools/gpu-agent-turn.sh OUT_DIR TURN_FILE
#
# TURN_FILE: bash commands, run with the session checkout as the current directory (`git cutile-perf ...`,
# edits to the kernel). The previous turn's state is read from .gpu/agent/state.tar.xz when the machine is
# fresh; OUT_DIR gets turn.log (everything the commands printed), timings.txt and state.tar.xz (copy it to
# .gpu/agent/state.tar.xz for the next turn).
set -uo pipefail
usage="usage: tools/gpu-agent-turn.sh OUT_DIR TURN_FILE"
mkdir -p "${1:?$usage}"
out=$(cd "$1" && pwd)
turn=$(cd "$(dirname "${2:?$usage}")" && pwd)/$(basename "$2")
root=$(pwd)
session=/tmp/agent-session

if [ ! -x .gpu/bin/git-cutile-perf ]; then
    mkdir -p .gpu/bin && xz -dc .gpu/git-cutile-perf.xz > .gpu/bin/git-cutile-perf && chmod +x .gpu/bin/git-cutile-perf || exit 1
fi
# shellcheck source=/dev/null
source .gpu/device-setup.sh > "$out/setup.log" 2>&1 || { cat "$out/setup.log"; exit 1; }

if [ ! -d "$session/.git" ]; then
    if [ -f "$root/.gpu/agent/state.tar.xz" ]; then
        mkdir -p "$session" && tar -xJf "$root/.gpu/agent/state.tar.xz" -C "$session" || exit 1
        # the state holds the git dir, the tool's sandbox/ and the turn's uncommitted edit, not the tree
        git -C "$session" checkout -q -- . && git -C "$session" apply --allow-empty .git/agent-edit.patch || exit 1
        echo "(a fresh machine: the session checkout was restored from the last turn)"
    else
        git clone -q "$TILEGYM" "$session" || exit 1
    fi
fi
cd "$session" || exit 1
export PYTHONPATH="$session/src:/tmp/site" CUTILE_PERF_NO_PROGRESS=1

start=$(date +%s%N)
bash "$turn" > "$out/turn.log" 2>&1
rc=$?
echo "turn rc=$rc wall=$(( ($(date +%s%N) - start) / 1000000 ))ms" >> "$out/timings.txt"
# lean enough to travel beside the toolchain (64 MiB in all): the git dir repacked, sandbox/, the edit
git -C "$session" diff --binary > "$session/.git/agent-edit.patch"
git -C "$session" gc -q --prune=now
(cd "$session" && tar --exclude=__pycache__ -cJf "$out/state.tar.xz" .git $(ls -d sandbox 2>/dev/null))
cat "$out/turn.log"
cat "$out/timings.txt"
