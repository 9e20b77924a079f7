#!/usr/bin/env bash
# Runs the inspector over every cuTile file of a TileGym checkout and prints the counts
# (files parsed, kernels, launches, registrations, tuning calls) and the launches whose kernel it
# could not name. Usage: tools/inspect-tilegym.sh /path/to/TileGym
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 /path/to/TileGym" >&2; exit 2; }
cd "$(dirname "$0")/.."
TILEGYM="$(cd "$1" && pwd)" cargo test --quiet --test tests inspect_tilegym:: -- --ignored --nocapture
