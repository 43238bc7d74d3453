#!/usr/bin/env bash
# make demo: start the SIMULATED endpoint on a free loopback port, run distill
# over the example problems with examples/demo.yaml, print where the corpus is.
# make demo-grounded runs it with CONFIG=examples/demo-grounded.yaml (the
# example documents, grounded style). Arguments are passed on to distill run,
# e.g. CONFIG=examples/demo-grounded.yaml OUT=runs/demo-grounded-open bash
# examples/demo.sh --open-book.
# The simulated faults are seeded and drawn per request (-seed 1
# -faults-by-request), so every run makes the same corpus and the figures of
# the README's tour (and of docs/) are what you get.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin}
OUT=${OUT:-runs/demo}
CONFIG=${CONFIG:-examples/demo.yaml}
mkdir -p "$BIN"
go build -o "$BIN/simllm" ./examples/simllm

fifo=$(mktemp -u)
mkfifo "$fifo"
"$BIN/simllm" -addr 127.0.0.1:0 -problems examples/problems.jsonl -latency 20ms -fault-rate 0.05 -seed 1 -faults-by-request >"$fifo" 2>/dev/null &
sim=$!
trap 'kill $sim 2>/dev/null || true; rm -f "$fifo"' EXIT
exec 3<"$fifo"
read -r url <&3
echo "demo: simulated endpoint (not a real model) at $url"

status=0
"$BIN/distill" run --config "$CONFIG" --base-url "$url" --out "$OUT" "$@" || status=$?
echo
echo "demo: corpus in $OUT/shards (manifest $OUT/manifest.json, report $OUT/report.json)"
echo "demo: distill exit code $status (0 ok, 3 some problems failed); run the same make target again to see a resume: finished problems are skipped and nothing is sent"
case $status in
  0|3) exit 0 ;;
  *) exit "$status" ;;
esac
