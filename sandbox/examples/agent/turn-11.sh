# turn 11: start (user's filter: static persistent 262144 grid + the static_persistent correctness cases), skips, steps B G E
source "$(dirname "$0")/lib.sh"; LIMIT=370
set -x
git cutile-perf start rms_norm --suite ops --json --python python3 --filter "static_persistent and (262144 or not test_perf)" --class memory > /tmp/start.json; echo "rc=$? [elapsed $(el)s]"
set +x
python3 - <<'PY'
import json
d=json.load(open('/tmp/start.json'))
s=d.get('session') or {}
print(json.dumps({k:d.get(k) for k in ('branch','latency_ms','noisy','error','hint')}, indent=1))
print(json.dumps({k:s.get(k) for k in ('allowed','class','class_source')}, indent=1))
for c in d.get('configs') or []: print("  CONFIG", json.dumps(c)[:400])
print(json.dumps(d.get('next_action'), indent=1))
print("KEYS", sorted(d.keys()))
PY
grep -q '"branch"' /tmp/start.json || { cat /tmp/start.json; exit 1; }
git cutile-perf next --json --skip A --why "the timed kernel _rms_norm_kernel_static_persistent already uses ct.load/ct.store (gather/scatter only in the untimed multi_wave kernels)" | python3 -c "import json,sys;d=json.load(sys.stdin);print('after skip A:', d.get('letters') or (d.get('next_action') or {}).get('letters'), d.get('error'), d.get('hint'))"
git cutile-perf next --json --skip K --why "one kernel launch per call; no small copy kernels to batch" | python3 -c "import json,sys;d=json.load(sys.stdin);print('after skip K:', d.get('letters') or (d.get('next_action') or {}).get('letters'), d.get('error'), d.get('hint'))"
git cutile-perf next --json --skip F --why "both ct.store calls of the timed kernel already pass allow_tma=False" > /tmp/next.json; cat /tmp/next.json | head -c 3000; echo
step B memory "persistent grid NUM_SMS*2 with occupancy=2 (two resident blocks per SM)"
step G memory "TILE_SIZE_M 16->8 for TILE_SIZE_N<=1024"
step E latency "Y store latency hint 3->1"
git cutile-perf table
git cutile-perf status --json | head -c 4000; echo
echo "turn done [elapsed $(el)s]"
