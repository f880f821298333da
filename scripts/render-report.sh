#!/usr/bin/env bash
# Renders the HTML report of a failing deliberate bug with headless Chromium
# and saves a screenshot, to see what a person reading a CI artifact sees:
# the summary table, the failure with its smallest failing history, and
# porcupine's visualization embedded.
#
#   scripts/render-report.sh [OUT_DIR]
#
# Needs Debian's chromium (apt-get install chromium); nothing else.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-$(mktemp -d)}
command -v chromium >/dev/null || { echo "render-report: chromium is not installed (apt-get install chromium)" >&2; exit 2; }
go build -o "$out/storecheck" ./cmd/storecheck
# A bug only concurrency shows: the linearizability check fails on it.
set +e
"$out/storecheck" selftest-subject continuity_upsert_check_outside_tx run --store continuity --seed 3 \
  --report-dir "$out/report" >"$out/run.txt" 2>&1
code=$?
set -e
[ "$code" -eq 1 ] || { echo "render-report: expected a conformance failure (exit 1), got $code" >&2; cat "$out/run.txt" >&2; exit 1; }
profile=$(mktemp -d)
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
  --disable-component-update --disable-sync --user-data-dir="$profile" --hide-scrollbars \
  --window-size=1400,2400 --virtual-time-budget=5000 \
  --screenshot="$out/report.png" "file://$out/report/report.html" >/dev/null 2>&1
rm -rf "$profile"
viz=$(ls "$out"/report/linearizability-*/visualization.html)
grep -q "porcupine visualization" "$out/report/report.html"
echo "report: $out/report/report.html"
echo "visualization: $viz"
echo "screenshot: $out/report.png"
