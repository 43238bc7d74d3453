#!/usr/bin/env bash
# examples/readme-check.sh: re-run the demo from scratch in a temporary run
# directory and print the README's headline figures, each marked "ok" when the
# README holds the line as printed, "DIFFERS" when it does not. Run it by hand
# after a change that moves the demo's figures (prompts, the simulated endpoint,
# the verifier, the summary's wording), then update the README's example blocks.
#
#   bash examples/readme-check.sh          # about a minute on 2 cores; needs jq, curl, python3
#
# Everything runs against the SIMULATED endpoint (examples/simllm), started the
# way examples/demo.sh starts it (-seed 1 -faults-by-request), so the figures are
# the same on every run; times, ports and paths are not compared.
# Exit code: 0 every figure is in the README, 1 some differ, 2 a step failed.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=bin
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

make -s build >/dev/null
go build -o "$BIN/simllm" ./examples/simllm

differs=0
tr -s ' ' <README.md >"$work/readme.txt"
check() { # check LINE...: print each line, marked by whether README.md has it (runs of spaces as one)
  local line
  for line in "$@"; do
    if grep -qF -- "$(tr -s ' ' <<<"$line")" "$work/readme.txt"; then echo "  ok       $line"; else echo "  DIFFERS  $line"; differs=1; fi
  done
}
lines() { # lines FILE PATTERN: the lines of FILE matching PATTERN, one per array entry
  mapfile -t got < <(grep -E -- "$2" "$1" || true)
}

start_sim() { # start_sim FILE FLAGS...: start simllm, its URL in FILE, its pid in pids
  "$BIN/simllm" -addr 127.0.0.1:0 "${@:2}" >"$1" 2>/dev/null &
  pids+=($!)
  for _ in $(seq 50); do [ -s "$1" ] && return 0; sleep 0.1; done
  echo "readme-check: simllm did not start" >&2; exit 2
}

start_sim "$work/demo.url" -problems examples/problems.jsonl -latency 20ms -fault-rate 0.05 -seed 1 -faults-by-request
url=$(head -n 1 "$work/demo.url")
run=$work/demo

echo "make demo (distill run --config examples/demo.yaml), first run:"
rc=0
"$BIN/distill" run --config examples/demo.yaml --base-url "$url" --out "$run" --quiet >"$work/run1.txt" 2>/dev/null || rc=$?
[ "$rc" = 0 ] || [ "$rc" = 3 ] || { echo "readme-check: distill run exit code $rc" >&2; exit 2; }
lines "$work/run1.txt" '^(problems:|  done |rollouts:|rubric items|empirically|requests:)'
check "${got[@]}"
echo "second run (the resume):"
"$BIN/distill" run --config examples/demo.yaml --base-url "$url" --out "$run" --quiet >"$work/run2.txt" 2>/dev/null || true
lines "$work/run2.txt" '^  done'
echo "  (printed) ${got[0]}"

echo "distill compact:"
"$BIN/distill" compact "$run" 2>/dev/null | sed "s|$run|runs/demo|" >"$work/compact.txt"
lines "$work/compact.txt" '.'
check "${got[@]}"

echo "validate:"
"$BIN/validate" "$run" 2>/dev/null | head -n 24 >"$work/validate.txt" || true
lines "$work/validate.txt" '^  (43 records|job fingerprints|SUGGEST  |Overall  |Total  )'
check "${got[@]}"
"$BIN/validate" "$run" --json 2>/dev/null | jq -c '.validity.overall' >"$work/vjson.txt"
lines "$work/vjson.txt" '.'
check "${got[@]}"

echo "distill repair (eight bytes of the last shard flipped), then the same run again:"
cp -a "$run" "$work/damaged"
last=$(jq -r '.shards[-1].file' "$work/damaged/manifest.json")
python3 -c 'import sys; p=sys.argv[1]; b=bytearray(open(p,"rb").read()); b[1000:1008]=bytes(x^0xff for x in b[1000:1008]); open(p,"wb").write(b)' "$work/damaged/$last"
"$BIN/distill" repair "$work/damaged" 2>/dev/null | sed -n 1p | sed "s|$work/damaged|runs/demo|" >"$work/repair.txt" || true
"$BIN/distill" run --config examples/demo.yaml --base-url "$url" --out "$work/damaged" --quiet 2>/dev/null >>"$work/repair.txt" || true
lines "$work/repair.txt" '^(runs/demo: 1 damaged|  done )'
check "${got[@]}"
lines "$work/repair.txt" '^requests:'
echo "  (printed) ${got[0]}   (from cache: may differ from the README by one)"

echo "four partitions and their merge (a fresh simulated endpoint: its faults depend on how often it saw a request):"
start_sim "$work/parts.url" -problems examples/problems.jsonl -latency 20ms -fault-rate 0.05 -seed 1 -faults-by-request
url=$(head -n 1 "$work/parts.url")
for I in 0 1 2 3; do
  "$BIN/distill" run --config examples/demo.yaml --base-url "$url" --out "$work/big/part-$I" --partition "$I/4" --quiet >/dev/null 2>&1 || true
done
"$BIN/distill" status "$work"/big/part-* 2>/dev/null | sed "s|$work/|runs/|" >"$work/parts.txt" || true
"$BIN/distill" merge "$work"/big/part-* --out "$work/big/all" 2>/dev/null | sed "s|$work/|runs/|" >>"$work/parts.txt" || true
lines "$work/parts.txt" '^(runs/big/part-|total|partitions:|problems:|  done |requests:)'
check "${got[@]}"

echo "validate rejudge (simllm -seed 7 -invalid-rate 0.1 as the other judge):"
start_sim "$work/sim7.url" -seed 7 -invalid-rate 0.1
# Its default response cache is the user's ($XDG_CACHE_HOME/rubricforge): give it
# an empty one, or answers cached by earlier checks show as "from the cache".
(cd "$work" && XDG_CACHE_HOME="$work/xdg-cache" "$OLDPWD/$BIN/validate" rejudge "$run" --base-url "$(head -n 1 sim7.url)" --model simulated \
  --sample 100 --seed 1 --price-prompt 0.40 --price-completion 1.60 2>/dev/null) >"$work/rejudge.txt" || true
lines "$work/rejudge.txt" '^  (sample:|requests:|tokens:|validity agreement|validity Cohen)'
check "${got[@]}"

echo "rewardd on the run, simllm (no flags) as judge:"
start_sim "$work/sim.url"
"$BIN/rewardd" --corpus "$run" --judge-base-url "$(head -n 1 "$work/sim.url")" --judge-model simulated \
  --addr 127.0.0.1:0 >"$work/rewardd.url" 2>/dev/null &
pids+=($!)
for _ in $(seq 100); do [ -s "$work/rewardd.url" ] && break; sleep 0.1; done
r=$(head -n 1 "$work/rewardd.url")
curl -s "$r/v1/score" -d '{"scheme": "srar", "items": [{"request_id": "a", "problem_id": "7b478f8547b56047", "response": "### Step 1: Integrate.\nThe antiderivative is x^3 + x.\n### Step 2: Evaluate.\n(8 + 2) - 0 = 10.\n<answer>10</answer>"}]}' |
  jq -c '.results[]' >"$work/score.txt"
curl -s "$r/healthz" | jq -c '{records}' | sed 's/[{}]//g' >"$work/healthz.txt"
lines "$work/score.txt" '.'
check "${got[@]}"
echo "  (printed) /healthz $(cat "$work/healthz.txt")"

if [ "$differs" = 0 ]; then
  echo "readme-check: every figure above is in README.md"
else
  echo "readme-check: some figures differ from README.md; update its example blocks"
fi
exit "$differs"
