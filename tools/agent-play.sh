#!/usr/bin/env bash
# The mistakes an agent makes in the loop, played on the project's fixture (no GPU): a step without
# --opt, a hand commit of an allowed path, a hand commit outside them, a commit past the hooks, a step
# with no edit, a step after the stop, a start on a session branch, a step stopped by SIGINT while
# status is asked, the MCP server's schema and hints, a failing session perf file. Each refusal's hint is followed as the agent would, and checked
# against the skill's rules (it never asks to commit, reset, rebase, revert or stash by hand, nor to
# resume a stopped loop without the user). At the end the tried letters are the letters applied, and
# `verify` finds nothing.
#
#   tools/agent-play.sh [BINARY]    (default: target/debug/git-cutile-perf; PYTHON: a python with pytest)
#
# Prints one line per check and `agent-play: N checks passed`; exits 1 at the first that fails.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(realpath "${1:-$root/target/debug/git-cutile-perf}")
# the hooks find the tool on PATH, as for a user who installed it
bindir=$(mktemp -d)
ln -s "$bin" "$bindir/git-cutile-perf"
export PATH="$bindir:$PATH"
python=${PYTHON:-python3}
if ! "$python" -c 'import pytest' 2>/dev/null; then
    python=$HOME/.cache/git-cutile-perf/venv/bin/python
fi
"$python" -c 'import pytest' || { echo "agent-play: no python with pytest (set PYTHON)" >&2; exit 1; }

work=$(mktemp -d)
# `repair` also ends the warm workers the steps kept
trap '(cd "$work/repo" 2>/dev/null && git cutile-perf repair >/dev/null 2>&1); rm -rf "$work" "$bindir"' EXIT
cp -r "$root/fixtures/tilegym" "$work/repo"
cd "$work/repo"
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
git init -q -b main
git -c user.name=agent -c user.email=agent@localhost commit -q --allow-empty -m root
git add -A
git -c user.name=agent -c user.email=agent@localhost commit -q -m "A TileGym-shaped repository"
git config user.name agent
git config user.email agent@localhost
kernel=src/tilegym/ops/cutile/vector_add.py
test_file=tests/ops/test_vector_add.py

checks=0
pass() { checks=$((checks + 1)); echo "ok   $1"; }
fail() { echo "FAIL $1" >&2; exit 1; }
# A field of the JSON object in $1 (a Python expression over `r`).
field() { "$python" -c "import json,sys; r=json.loads(sys.argv[1]); print($2)" "$1"; }
# The tool's --json output, whatever its exit code.
tool() { git cutile-perf "$@" 2>/dev/null || true; }
# A hint the agent can follow without breaking the skill's rules.
followable() {
    local hint=$1 what=$2
    if "$python" - "$hint" <<'EOF'; then pass "$what: the hint keeps the skill's rules"; else fail "$what: $hint"; fi
import re, sys
hint = sys.argv[1].lower()
by_hand = r"git (commit|reset|rebase|revert|stash|cherry-pick)|commit again|--amend|pass --continue"
sys.exit(1 if re.search(by_hand, hint) else 0)
EOF
}
latency() { sed -i "s/^LATENCY_MS = .*/LATENCY_MS = {\"small\": $1, \"large\": $2}/" "$kernel"; }
letters_applied=()

r=$(tool start vector_add --no-gpu --python "$python" --json)
[ "$(field "$r" 'r["iteration"]')" = 0 ] || fail "start: $r"
pass "start: the baseline is recorded"

# 1. a step without --opt: refused, naming the letter next suggests; the edit stays
latency 0.08 0.8
r=$(tool step --json "tile size 256")
first=$(field "$r" 'r.get("error", "")')
hint=$(field "$r" 'r.get("hint", "")')
suggested=$(field "$(tool status --json)" 'r["next_action"]["letters"][0]')
case $hint in *"--opt $suggested"*) pass "a step without --opt is refused, its hint names --opt $suggested" ;;
*) fail "a step without --opt: $r" ;; esac
[ -n "$first" ] && git diff --quiet -- "$kernel" && fail "the edit is gone"
followable "$hint" "a step without --opt"
# the agent follows it with the letter it applied (tile size: G, a letter next lists)
r=$(tool step --json --opt G --cause memory "tile size 256")
[ "$(field "$r" 'r["status"]')" = keep ] || fail "step --opt G: $r"
letters_applied+=(G)
pass "step --opt G records the letter"

# 2. a hand commit of an allowed path: the hook refuses it, for step
latency 0.07 0.7
git add "$kernel"
if out=$(git commit -q -m "faster" 2>&1); then fail "a hand commit of $kernel went through"; fi
hint=$(printf '%s\n' "$out" | sed -n 's/^hint: //p')
case $hint in *"git cutile-perf step"*"--cause <CAUSE>"*) pass "a hand commit of an allowed path is refused, its hint names step with --cause" ;;
*) fail "a hand commit of an allowed path: $out" ;; esac
followable "$hint" "a hand commit of an allowed path"
r=$(tool step --json --opt B --cause memory "persistent scheduling")
[ "$(field "$r" 'r["status"]')" = keep ] || fail "the change the hook refused, stepped: $r"
letters_applied+=(B)
pass "the change the hook refused is recorded by step"

# 3. a hand commit outside the allowed paths: refused; the hint says to undo those changes
echo "# weaker" >>"$test_file"
if out=$(git commit -q -am "weaker test" 2>&1); then fail "a hand commit of $test_file went through"; fi
hint=$(printf '%s\n' "$out" | sed -n 's/^hint: //p')
case $out in *"$test_file"*) pass "a hand commit outside the allowed paths is refused and names the path" ;;
*) fail "a hand commit outside: $out" ;; esac
followable "$hint" "a hand commit outside the allowed paths"
git restore --staged --worktree -- "$test_file"

# 4. a commit past the hooks: status reports it, step refuses, repair takes it back
latency 0.06 0.6
git commit -q --no-verify -am "past the hooks"
r=$(tool status --json)
[ "$(field "$r" 'r["state"], r["next_action"]["kind"]')" = "foreign repair" ] \
    || fail "status after a commit past the hooks: $r"
pass "status reports a commit past the hooks as state foreign, next_action repair"
echo "# and an edit" >>"$kernel"
r=$(tool step --json --opt E "latency hints")
hint=$(field "$r" 'r.get("hint", "")')
case $hint in *"git cutile-perf repair"*) pass "step refuses over it, its hint names repair" ;;
*) fail "step over a commit past the hooks: $r" ;; esac
followable "$hint" "a step over a commit past the hooks"
r=$(tool repair --json)
[ "$(field "$r" 'r["action"], r["next_action"]["kind"]')" = "taken-back edit-and-step" ] \
    || fail "repair: $r"
[ "$(git diff HEAD -- "$kernel" | grep -c '^+[^+]')" = 1 ] || fail "repair kept more than the edit"
pass "repair takes the committed change back and keeps the edit beside it"
git restore -- "$kernel"
give_back=$(field "$r" 'r["what"].split("`")[1]')
followable "$give_back" "repair's command that gives the change back"
sh -c "$give_back" && grep -q '^LATENCY_MS = {"small": 0.06' "$kernel" || fail "the change was not given back: $r"
pass "repair names the command that gives the taken-back change back to the work tree"
# `git apply -3` stages what it applies
git restore --staged --worktree -- "$kernel"

# 5. a step with no edit: refused, nothing recorded
head=$(git rev-parse HEAD)
r=$(tool step --json --opt E "nothing")
hint=$(field "$r" 'r.get("hint", "")')
[ -n "$hint" ] && [ "$(git rev-parse HEAD)" = "$head" ] || fail "a step with no edit: $r"
pass "a step with no edit is refused, nothing recorded"
followable "$hint" "a step with no edit"

# 6. a new session is never built on this session's branch
r=$(tool start swish --no-gpu --python "$python" --json)
case $(field "$r" 'r.get("hint", "")') in *"check out the branch it started from (\`git checkout main\`)"*)
    pass "start on a session branch is refused, naming the branch to check out" ;;
*) fail "start on a session branch: $r" ;; esac
[ "$(git branch --list 'cutile-perf-swish*')" = "" ] || fail "a swish session was made"

# 7. what times a kernel, in the words the skill reads
r=$(tool inspect scale --suite liger --json)
[ "$(field "$r" 'r["measured_by"]')" = correctness_only ] || fail "inspect scale: $r"
out=$(git cutile-perf inspect swish 2>&1)
case $out in *"--test"*) fail "inspect swish asks for --test: $out" ;; esac
pass "inspect names measured_by; a benchmark-only kernel is not sent to --test"

# 8. a step stopped like Ctrl-C while another command asks status: status waits while the step holds
# the lock; after the stop nothing is recorded, the edit stays, and status steps it rather than
# inviting a second change. Through git, the stop is git's own death by SIGINT (the skill says so).
sed -i 's/^CRASH = .*/CRASH = "hang"/' "$kernel"
head=$(git rev-parse HEAD)
r=$("$python" - <<'EOF2'
import json, os, signal, subprocess, time
lock = os.path.join(subprocess.check_output(["git", "rev-parse", "--git-dir"], text=True).strip(), "cutile-perf", "lock")
step = subprocess.Popen(["git", "cutile-perf", "step", "--opt", "none", "hangs"], start_new_session=True,
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
deadline = time.time() + 60
while not os.path.exists(lock) and step.poll() is None and time.time() < deadline:
    time.sleep(0.01)
status = json.loads(subprocess.run(["git", "cutile-perf", "status", "--json"], capture_output=True, text=True).stdout)
os.killpg(step.pid, signal.SIGINT)
print(json.dumps({"kind": status["next_action"]["kind"], "returncode": step.wait()}))
EOF2
)
[ "$(field "$r" 'r["kind"]')" = wait ] || fail "status while a step holds the lock: $r"
pass "status says wait from the first instant a step holds the lock"
[ "$(field "$r" 'r["returncode"]')" = -2 ] || fail "git cutile-perf after SIGINT: $r"
pass "through git, an interrupted step ends as the skill says (git dies of SIGINT)"
[ "$(git rev-parse HEAD)" = "$head" ] && ! git diff --quiet -- "$kernel" || fail "the stop recorded something or lost the edit"
sentence=$(field "$(tool status --json)" 'r["next_action"]["sentence"]')
case $sentence in *"Apply ONE"*) fail "status after the stop invites a second change: $sentence" ;;
*"already changes"*) pass "after the stop, status steps the edit in the work tree" ;;
*) fail "status after the stop: $sentence" ;; esac
git restore -- "$kernel"

# 9. through the MCP server: step requires opt, every tool says what it does to the repository, and
# a refusal's hint names tool arguments, not command-line options
r=$("$python" - <<'EOF2'
import json, subprocess
server = subprocess.Popen(["git", "cutile-perf", "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
def send(message):
    server.stdin.write(json.dumps(message) + "\n"); server.stdin.flush()
def answer():
    while True:
        reply = json.loads(server.stdout.readline())
        if "id" in reply:
            return reply
send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
      "capabilities": {}, "clientInfo": {"name": "agent-play", "version": "0"}}})
answer()
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
tools = {t["name"]: t for t in answer()["result"]["tools"]}
send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "status", "arguments": {}}})
status = answer()["result"]["structuredContent"]
server.stdin.close(); server.wait()
print(json.dumps({"required": tools["step"]["inputSchema"]["required"],
                  "annotated": all("readOnlyHint" in t.get("annotations", {}) for t in tools.values()),
                  "sentence": status["next_action"]["sentence"]}))
EOF2
)
[ "$(field "$r" '"opt" in r["required"] and r["annotated"]')" = True ] || fail "MCP tools: $r"
pass "MCP: step requires opt; every tool carries its annotations"
case $(field "$r" 'r["sentence"]') in *"--"*) fail "MCP sentence with options: $r" ;;
*'`step {'*) pass "MCP: the next action names a tool call with arguments" ;;
*) fail "MCP sentence: $r" ;; esac

# 10. two steps without a gain stop the loop; a step after the stop is refused, for the user
latency 0.09 0.9
r=$(tool step --json --opt E --cause memory "latency hints")
letters_applied+=(E)
latency 0.08 0.8
r=$(tool step --json --opt F --cause memory "num_ctas 2")
letters_applied+=(F)
r=$(tool status --json)
[ "$(field "$r" 'r["next_action"]["kind"]')" = stopped ] || fail "the loop did not stop: $r"
[ "$(field "$r" '"letters" in r["next_action"] and "variants" in r["next_action"]')" = True ] \
    || fail "stopped lacks letters or variants: $r"
pass "the loop stopped; next_action carries letters and variants"
latency 0.05 0.5
r=$(tool step --json --opt C "after the stop")
hint=$(field "$r" 'r.get("hint", "")')
case $hint in *"user"*) pass "a step after the stop is refused, its hint sends the agent to the user" ;;
*) fail "a step after the stop: $r" ;; esac
followable "$hint" "a step after the stop"
git restore -- "$kernel"

# the record: the tried letters are the letters applied, and verify finds nothing
r=$(tool status --json)
tried=$(field "$r" '" ".join(r["tried"])')
[ "$tried" = "${letters_applied[*]}" ] || fail "tried $tried, applied ${letters_applied[*]}"
pass "the tried letters are those applied: $tried"
r=$(tool verify --json)
[ "$(field "$r" 'len(r["findings"])')" = 0 ] || fail "verify: $r"
pass "verify finds nothing"

# 11. a failing scaffolded perf file: start names what it raised, with a hint, and says once what it
# took back
git checkout -q main
git cutile-perf start scale --suite liger --scaffold --python "$python" >/dev/null 2>&1
sed -i 's/common\.[a-z_]*(/common.no_such_harness_function(/' sandbox/perf_scale.py
r=$(tool start scale --suite liger --test sandbox/perf_scale.py --no-gpu --python "$python" --json)
error=$(field "$r" 'r.get("error", "")')
case $error in *"failed in the session perf file sandbox/perf_scale.py"*"nothing was kept"*) ;;
*) fail "a failing perf file: $r" ;; esac
case $error in *"nothing was created"*) fail "a failing perf file contradicts itself: $error" ;; esac
[ -n "$(field "$r" 'r.get("hint") or ""')" ] || fail "a failing perf file has no hint: $r"
pass "a failing scaffolded perf file is named with what it raised and a hint"
echo "agent-play: $checks checks passed"
