#!/usr/bin/env bash
# The README's pictures of the H200 sessions' reports: each tests/data/h200-sessions/<kernel>/perf_results.html
# as headless Chromium shows it (the page's top: session, table, plot), at half scale, written beside it
# as perf_results.png, quantized to 256 colours where pngquant is there (a third of the size, the text as
# sharp). Needs Debian's chromium. Usage: tools/report-screenshots.sh
set -euo pipefail
cd "$(dirname "$0")/.."
profile="$(mktemp -d /tmp/report-screenshots.XXXXXX)"
trap 'rm -rf "$profile"' EXIT
for kernel in rms_norm matmul rope; do
  dir="tests/data/h200-sessions/$kernel"
  chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync --hide-scrollbars \
    --user-data-dir="$profile" --force-device-scale-factor=0.5 --window-size=1000,2000 \
    --screenshot="$PWD/$dir/perf_results.png" "file://$PWD/$dir/perf_results.html" 2>/dev/null
  if command -v pngquant > /dev/null; then
    pngquant --quality 60-85 --speed 1 --force --output "$dir/perf_results.png" "$dir/perf_results.png"
  fi
done
