#!/usr/bin/env bash
# Runs the README's two commands as a new user on a bare Debian would: a fresh HOME, no git identity, and
# a PATH of Rust and the system's own directories only (Debian's git, a python3 without pytest; no pyenv,
# no /usr/local). `.ci/run` calls it; run it by hand the same way:
#
#   tools/bare-machine.sh test      # the README's test command
#   tools/bare-machine.sh try       # the README's "Try it" command (a release build: minutes)
#   tools/bare-machine.sh run COMMAND...   # another command in that environment
#   tools/bare-machine.sh --print test|try [README]   # only print the command read from the README
#
# The new HOME is removed at the end, unless BARE_HOME names it: commands that share it (the test command
# and the ignored tests run after it) share one PATH, so cargo builds nothing twice.
#
# Each command is read from the README itself, so the check cannot drift from what the README tells
# people to type: the first indented line (or the first command line of a fenced block) in the section
# under its heading; a section that ends (at the next heading) without one is an error.
set -euo pipefail
cd "$(dirname "$0")/.."
usage="usage: tools/bare-machine.sh [--print] test|try [README] | run COMMAND..."

# The command in README section `$1` of file `$2`.
readme_command() {
    awk -v h="$1" '
        !found { if (index($0, h) == 1 && (length($0) == length(h) || substr($0, length(h) + 1, 1) == " ")) found = 1; next }
        fence && /^ *```/ { exit }
        fence && !/^[[:space:]]*(#|$)/ { sub(/^[[:space:]]*(\$ )?/, ""); print; exit }
        fence { next }
        /^ *```/ { fence = 1; next }
        /^#/ { exit }
        /^    [^ ]/ { sub(/^    /, ""); print; exit }
    ' "$2"
}

print_only=
[ "${1:-}" = --print ] && { print_only=1; shift; }
which=${1:?$usage}
case $which in
test) heading='## Test' ;;
try) heading='## Try it' ;;
run) heading= ;;
*) echo "$usage" >&2; exit 2 ;;
esac
if [ -n "$heading" ]; then
    readme=${2:-README.md}
    command=$(readme_command "$heading" "$readme")
    [ -n "$command" ] || { echo "no command under \"$heading\" in $readme" >&2; exit 1; }
else
    shift
    [ $# -gt 0 ] || { echo "$usage" >&2; exit 2; }
    command="$*"
fi
[ -z "$print_only" ] || { printf '%s\n' "$command"; exit 0; }

cargo_bin=$(dirname "$(command -v cargo)")
if [ -n "${BARE_HOME:-}" ]; then
    home=$BARE_HOME
else
    home=$(mktemp -d "${TMPDIR:-/tmp}/bare-home.XXXXXX")
    trap 'rm -rf "$home"' EXIT
fi
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
    bash -c "$command"
echo "bare machine: \`$command\` passed in ${SECONDS} s"
