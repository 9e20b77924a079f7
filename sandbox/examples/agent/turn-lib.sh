# helpers for the agent's turns (sourced by turn.sh)
D=$(cd "$(dirname "$0")" && pwd)
T0=$(date +%s)
el(){ echo $(( $(date +%s) - T0 )); }
HALT=0
kind=${kind:-edit-and-step}
summ(){ python3 - "$1" <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
na=d.get('next_action') or {}
print("SUMMARY", json.dumps({k:d.get(k) for k in ('iteration','status','decision','correctness','change_pct','baseline_ms','latency_ms','reason','variant_of','error','hint')}))
for c in d.get('configs') or []:
    print("  CONFIG", json.dumps(c)[:400])
print("  NEXT", json.dumps({k:na.get(k) for k in ('kind','letters','variants','why','cause')}))
print("  SENTENCE", na.get('sentence'))
PY
}
step(){ # step LETTER CAUSE DESCRIPTION...
  local L=$1 C=$2; shift 2
  if [ "$HALT" = 1 ]; then echo "NOT RUN step $L: halted"; return 1; fi
  if [ "$(el)" -gt "$LIMIT" ]; then echo "NOT RUN step $L: turn elapsed $(el)s > $LIMIT s"; HALT=1; return 1; fi
  python3 "$D/edit.py" "$L" || { echo "edit $L did not apply"; return 1; }
  git diff --stat
  local cont=""
  case "$kind" in stopped|escalate) cont="--continue"; echo "(the user's standing 'continue': stepping with --continue)";; esac
  echo "+ git cutile-perf step --json --budget ${BUDGET:-3m} --opt $L --cause $C $cont \"$*\"   [elapsed $(el)s]"
  git cutile-perf step --json --budget "${BUDGET:-3m}" --opt "$L" --cause "$C" $cont "$*" > "/tmp/step-$L.json"; local rc=$?
  echo "rc=$rc [elapsed $(el)s]"; cat "/tmp/step-$L.json"; summ "/tmp/step-$L.json"
  kind=$(python3 -c "import json;d=json.load(open('/tmp/step-$L.json'));print((d.get('next_action') or {}).get('kind',''))" 2>/dev/null)
  if ! python3 -c "import json,sys;d=json.load(open('/tmp/step-$L.json'));sys.exit(0 if d.get('status') and not d.get('error') else 1)" 2>/dev/null; then echo "step $L refused or failed (rc=$rc): halting the turn's plan"; HALT=1; fi
  if [ "$kind" = repair ]; then git cutile-perf repair --json; kind=$(git cutile-perf status --json | python3 -c "import json,sys;print(json.load(sys.stdin)['next_action']['kind'])"); fi
  echo "kind now: $kind"
}
