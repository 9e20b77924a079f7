set -x
git cutile-perf start rms_norm --suite ops --json --python python3 --filter "static_persistent and 262144"
git cutile-perf next --json
