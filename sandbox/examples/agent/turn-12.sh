# turn 12: the loop stopped (no gain 3 in a row); the user's standing "continue" -> steps C J H with --continue, then the report verbs
kind=stopped; source "$(dirname "$0")/lib.sh"; LIMIT=330
BUDGET=4m step C memory "autotune TILE_SIZE_M x occupancy per shape (M>=8192) with ct.tune.exhaustive_search"
step J latency "prefetch the next row tile before this tile's stores (break store->load token chain)"
step H compute "flush_to_zero on the rsqrt"
git cutile-perf table
git cutile-perf verify --json
git cutile-perf status --json
git cutile-perf plot; echo "plot rc=$?"; ls -la sandbox/
echo "turn done [elapsed $(el)s]"
