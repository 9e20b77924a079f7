set -x
[ -f src/tilegym/ops/cutile/rms_norm.py ] || git checkout -- .   # state carried as .git only (64 MiB carry limit)
python3 - <<'PY'
p='src/tilegym/ops/cutile/rms_norm.py'; s=open(p).read()
old='<one TileGym source line: the TILE_SIZE_M = 4 default in _RMSNorm.forward>'
assert s.count(old)==1; s=s.replace(old,'<the same line with 8>'); open(p,'w').write(s)
PY
git diff --stat
git cutile-perf step --json --opt G --cause memory "TILE_SIZE_M 4->8 for 2048<=N<16384 rows" > /tmp/s1.json; echo "rc=$?"; cat /tmp/s1.json
git cutile-perf table
git cutile-perf verify --json
git cutile-perf status --json | python3 -c "import json,sys;d=json.load(sys.stdin);print(json.dumps({k:d.get(k) for k in ('baseline_ms','best_ms','iteration','next_action')},indent=1))"
