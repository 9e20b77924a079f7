#!/usr/bin/env bash
# Runs the README's two commands as a new user on a bare Debian would: a fresh HOME, no git identity, and
# a PATH of Rust and the system's own directories only (Debian's git, a python3 without pytest; no pyenv,
# no /usr/local). `.ci/run` calls it; run it by hand the same way:
#
#   tools/bare-machine.sh test      # the README's test command
#   tools/bare-machine.sh try       # the README's "Try it" command (a release build: minutes)
#
# Each command is read from the README itself (the indented line under its heading), so the check cannot
# drift from what the README tells people to type.
set -euo pipefail
cd "$(dirname "$0")/.."
which=${1:?usage: tools/bare-machine.sh test|try}
case $which in
test) heading='## Test' ;;
try) heading='## Try it' ;;
*) echo "usage: tools/bare-machine.sh test|try" >&2; exit 2 ;;
esac
# the first indented line after the heading
command=$(awk -v h="$heading" 'index($0, h) == 1 { found = 1; next } found && /^    [^ ]/ { sub(/^    /, ""); print; exit }' README.md)
[ -n "$command" ] || { echo "no command under \"$heading\" in README.md" >&2; exit 1; }

cargo_bin=$(dirname "$(command -v cargo)")
home=$(mktemp -d "${TMPDIR:-/tmp}/bare-home.XXXXXX")
trap 'rm -rf "$home"' EXIT
python=/usr/bin/python3
if "$python" -c 'import pytest' 2>/dev/null; then
    echo "note: $python has pytest here, so the harness's own environment is not exercised"
fi
echo "bare machine: HOME=$home, git $(/usr/bin/git --version | cut -d' ' -f3), $("$python" --version)"
echo "\$ $command"
# Rust stays where rustup put it (CARGO_HOME, RUSTUP_HOME: its toolchain and the crates it fetched);
# `cargo install` writes into the new HOME, whose bin comes first on PATH as rustup's profile puts it.
env -i \
    HOME="$home" \
    PATH="$home/.cargo/bin:$cargo_bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}" \
    RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}" \
    CARGO_INSTALL_ROOT="$home/.cargo" \
    CARGO_TARGET_DIR="$PWD/target" \
    TERM=dumb \
    ${CI:+CI="$CI"} \
    ${CUTILE_PERF_REQUIRE_SLURM:+CUTILE_PERF_REQUIRE_SLURM="$CUTILE_PERF_REQUIRE_SLURM"} \
    ${CUTILE_PERF_REQUIRE_CHROMIUM:+CUTILE_PERF_REQUIRE_CHROMIUM="$CUTILE_PERF_REQUIRE_CHROMIUM"} \
    bash -c "$command"
echo "bare machine: \`$command\` passed in ${SECONDS} s"
