#!/usr/bin/env bash
# examples/readme-check.sh: re-run the demos from scratch in a temporary
# directory and check the example blocks of README.md and docs/*.md against what
# the binaries print now. Each line is marked "ok" with the page that holds it,
# or "DIFFERS" when no page does. Run it by hand after a change that moves the
# demos' figures (prompts, the simulated endpoint, the verifier, a summary's
# wording), then update the blocks it names.
#
#   make build && bash examples/readme-check.sh   # a few minutes on 2 cores; needs jq, curl, python3
#   RF_SHOW_GOT=1 bash examples/readme-check.sh    # also prints what a differing block's commands printed
#
# Two kinds of check:
# - check LINE...: a line a run printed must be in README.md or a page of docs/
#   (runs of spaces count as one), for the blocks that cut a run's output;
# - blocks FILE SELECT...: examples/readme-blocks.py runs the "$ " commands of
#   the blocks of FILE that SELECT names (against the servers started here: its
#   ports and paths substituted) and compares every line the block shows.
#
# Everything runs against the SIMULATED endpoint (examples/simllm), started the
# way examples/demo.sh starts it (-seed 1 -faults-by-request) where figures
# depend on faults, so the figures are the same on every run; times, ports,
# hashes of a run and paths are not compared.
# Not re-checked (their blocks say how they were made): the benchmark figures,
# the rewardd memory measurement, a cancelled batch and an offline run's later
# waves, the Kubernetes and Slurm transcripts.
# Exit code: 0 every line is in place, 1 some differ, 2 a step failed.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
BIN=$root/bin
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

make -s build >/dev/null
go build -o "$BIN/simllm" ./examples/simllm
go build -o "$work/exportrows" ./examples/trainers/exportrows

differs=0
mkdir -p "$work/pages"
# A reply lost after the provider may have generated it is charged at once at
# its budget estimate: its prompt and the largest completion its stage had
# answered by then, which depends on the order the answers came in. So where a
# run lost replies (the demo endpoint's faults), the cost it prints varies a
# little from run to run: the figures of such a cost line, of the workers'
# cost column and of their budget's spent line are not compared (the count of
# replies lost is).
vary() {
  sed -E -e 's/cost \$[0-9.]+ \(with \$[0-9.]+ for ([0-9]+) replies lost/cost $~ (with $~ for \1 replies lost/' \
    -e 's/; spent \$[0-9.]+ together$/; spent $~ together/' \
    -e 's/^((runs\/[^ ]+\/part-[0-9]+|total \([0-9]+ workers\)) .*) [0-9]+\.[0-9]{4} -( ?)$/\1 ~ -\3/'
}
for f in README.md docs/*.md; do tr -s ' ' <"$f" | vary >"$work/pages/$(echo "$f" | tr / _)"; done
check() { # check LINE...: print each line, marked by the page that has it (runs of spaces as one)
  local line hit
  for line in "$@"; do
    hit=$(grep -lF -- "$(tr -s ' ' <<<"$line" | vary)" "$work"/pages/* 2>/dev/null | head -n 1 || true)
    if [ -n "$hit" ]; then
      hit=$(basename "$hit" | sed 's/^docs_/docs\//')
      echo "  ok       $hit: $line"
    else
      echo "  DIFFERS  $line"
      differs=1
    fi
  done
}
lines() { # lines FILE PATTERN: the lines of FILE matching PATTERN, one per array entry
  mapfile -t got < <(grep -E -- "$2" "$1" || true)
}
blocks() { # blocks FILE [readme-blocks.py flags]: run and check the blocks FILE's flags select, in $work
  local rc=0
  local show=()
  [ -z "${RF_SHOW_GOT:-}" ] || show=(--show-got)
  (cd "$root" && python3 examples/readme-blocks.py "$1" --cwd "$work" "${show[@]}" \
    --sub "bin/distill =$BIN/distill " --sub "bin/validate =$BIN/validate " --sub "bin/rewardd =$BIN/rewardd " "${@:2}" \
    --mask '[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z' --mask '127\.0\.0\.1:[0-9]+' --mask 'next probe in [0-9]+s') || rc=$?
  case $rc in
    0) ;;
    1) differs=1 ;;
    *) echo "readme-check: $1: a block could not be run" >&2; exit 2 ;;
  esac
}
start_sim() { # start_sim FILE FLAGS...: start simllm, its URL in FILE, its pid in pids
  "$BIN/simllm" -addr 127.0.0.1:0 "${@:2}" >"$1" 2>/dev/null &
  pids+=($!)
  for _ in $(seq 50); do [ -s "$1" ] && return 0; sleep 0.1; done
  echo "readme-check: simllm did not start" >&2; exit 2
}
start_rewardd() { # start_rewardd FILE FLAGS...: start rewardd on a free port, its URL in FILE, its pid in pids
  "$BIN/rewardd" --addr 127.0.0.1:0 "${@:2}" >"$1" 2>/dev/null &
  pids+=($!)
  for _ in $(seq 100); do [ -s "$1" ] && return 0; sleep 0.1; done
  echo "readme-check: rewardd did not start" >&2; exit 2
}
four_workers() { # four_workers DIR FLAGS...: a fresh demo endpoint (its URL in $url), the demo job as partitions 0..3 of 4 into DIR/part-I
  demo_sim "$work/$(basename "$1").url"
  url=$(head -n 1 "$work/$(basename "$1").url")
  local I
  for I in 0 1 2 3; do
    "$BIN/distill" run --config "$root/examples/demo.yaml" --base-url "$url" --out "$1/part-$I" --partition "$I/4" "${@:2}" --quiet >/dev/null 2>&1 || true
  done
}
# What a plan's wall time lines say depends on the pilot's latencies, which
# differ run to run on a loaded machine (and with them which bound binds, when
# two are close): their figures and the binding constraint are not compared,
# but the lines must be there, naming the units left.
wall_masks=(--mask 'the pilot took [0-9]+ s' --mask '(?<= left: ).*' --mask '(?<=binding: ).*'
  --mask "^ *(concurrency [0-9]+ would take it|twice the endpoint's rate limit|problems_in_flight [0-9]+ would take it|one [a-z]+'s chain of requests sets it).*")
plan_and_run() { # plan_and_run FILE SELECT URL CONFIG OUT: a plan's block, then the run and status's lines against the plan
  blocks "$1" --select "$2" --sub "\$URL=$3" --sub="--config examples/=--config $root/examples/" "${wall_masks[@]}"
  "$BIN/distill" run --config "$root/$4" --base-url "$3" --out "$work/$5" --max-cost-usd 0.2 --quiet >/dev/null 2>&1 || true
  "$BIN/distill" status "$work/$5" 2>/dev/null >"$work/planstatus.txt" || true
  # the plan's date, its wall time and the last session's time are the run's own
  lines "$work/planstatus.txt" '^(plan of |  against the plan)'
  local planned=${got[0]#*: }
  check "${planned%% left: *} left:" "${got[1]%%, the last session*}"
}
demo_sim() { # demo_sim FILE: a fresh simllm as make demo starts it
  start_sim "$1" -problems "$root/examples/problems.jsonl" -latency 20ms -fault-rate 0.05 -seed 1 -faults-by-request
}

demo_sim "$work/demo.url"
url=$(head -n 1 "$work/demo.url")
cd "$work"

echo "make demo (distill run --config examples/demo.yaml), first run (README):"
rc=0
"$BIN/distill" run --config "$root/examples/demo.yaml" --base-url "$url" --out runs/demo --quiet >run1.txt 2>/dev/null || rc=$?
[ "$rc" = 0 ] || [ "$rc" = 3 ] || { echo "readme-check: distill run exit code $rc" >&2; exit 2; }
lines run1.txt '^(run directory:|problems:|  done |rollouts:|rubric items|empirically|requests:)'
check "${got[@]}"
echo "second run (the resume):"
"$BIN/distill" run --config "$root/examples/demo.yaml" --base-url "$url" --out runs/demo --quiet >run2.txt 2>/dev/null || true
lines run2.txt '^  done'
echo "  (printed) ${got[0]}"

cd "$root"
echo "distill compact (docs/distill-compact.md):"
blocks docs/distill-compact.md --select "bin/distill compact runs/demo"

echo "validate (docs/validate.md):"
blocks docs/validate.md --select "bin/validate runs/demo" \
  --select "bin/validate runs/demo --min-validity 0.98 --max-violations 0 > /dev/null; echo \"exit code \$?\"" \
  --select "bin/validate runs/demo --json | jq -c '.validity.overall'"

echo "validate sample and agreement (docs/validate-agreement.md; the sheet filled by a script: items under eight words invalid):"
fill=$(printf '%s\n' 'import csv, sys' 'rows = list(csv.DictReader(open(sys.argv[1], newline="")))' \
  'for r in rows: r["human_valid"] = "invalid" if len(r["item"].split()) < 8 else "valid"' \
  'w = csv.DictWriter(open(sys.argv[1], "w", newline=""), fieldnames=list(rows[0])); w.writeheader(); w.writerows(rows)')
blocks docs/validate-agreement.md --select "bin/validate sample runs/demo --n 20 --seed 1 --out items.csv" \
  --sub "$BIN/validate agreement=python3 -c '$fill' items.csv && $BIN/validate agreement"

echo "distill export and rewardd (README's tour; simllm with no flags as the judge):"
start_sim "$work/sim.url"
sim=$(head -n 1 "$work/sim.url")
blocks README.md --select "bin/distill export runs/demo --format verl --out exports/demo-verl"
start_rewardd "$work/rewardd-export.url" --corpus "$work/exports/demo-verl" --judge-base-url "$sim" --judge-model simulated
blocks README.md --select "bin/simllm > sim.url &" --sub "http://127.0.0.1:8700=$(head -n 1 "$work/rewardd-export.url")"

echo "rewardd on runs/demo, its endpoints in the order shown, then its judge killed (docs/rewardd.md):"
start_sim "$work/judge.url"
judge_pid=${pids[-1]}
start_rewardd "$work/rewardd.url" --corpus "$work/runs/demo" --judge-base-url "$(head -n 1 "$work/judge.url")" --judge-model simulated
r=$(head -n 1 "$work/rewardd.url")
blocks docs/rewardd.md --sub "http://127.0.0.1:8700=$r" \
  --select "curl -s http://127.0.0.1:8700/get_reward -d @- <<'JSON' | jq -c ." --select "8700/score -d" \
  --select "curl -s http://127.0.0.1:8700/v1/score -d @- <<'JSON' | jq -c '.results[]'" \
  --select "curl -s http://127.0.0.1:8700/v1/score_group -d @- <<'JSON' > group.json" \
  --select "curl -s http://127.0.0.1:8700/healthz"
kill "$judge_pid"
for i in 1 2 3 4 5; do
  curl -s "$r/v1/score" -d "{\"items\": [{\"problem_id\": \"7b478f8547b56047\", \"response\": \"### Step 1: Integrate.\\nx^3 + x ($i).\\n<answer>10</answer>\"}]}" >/dev/null
done
blocks docs/rewardd.md --sub "http://127.0.0.1:8700=$r" --select "x^3 + x (6)"
echo "finish reasons, on a fresh rewardd on runs/demo (docs/rewardd.md):"
start_sim "$work/judge-finish.url"
start_rewardd "$work/rewardd-finish.url" --corpus "$work/runs/demo" --judge-base-url "$(head -n 1 "$work/judge-finish.url")" --judge-model simulated
blocks docs/rewardd.md --sub "http://127.0.0.1:8700=$(head -n 1 "$work/rewardd-finish.url")" \
  --select "cut_off, accuracy: .components.accuracy}'" --select "transpose[] | {correct"
echo "the training-time loops on runs/demo: a live rubric in runs/demo-live, then refine --from-stats (docs/training-loops.md):"
start_sim "$work/judge-loops.url"
start_rewardd "$work/rewardd-loops.url" --corpus "$work/runs/demo" --judge-base-url "$(head -n 1 "$work/judge-loops.url")" --judge-model simulated \
  --state-dir "$work/runs/demo-live" --retire-saturated --stats-window 4 --stats-min-rollouts 6
blocks docs/training-loops.md --sub "http://127.0.0.1:8720=$(head -n 1 "$work/rewardd-loops.url")" \
  --select "8720/v1/rubricator_prompt" --select "guide.json" --select "group.json" --select "jq -c '[.results[] | .rubric_version]'" \
  --select "bin/distill refine runs/demo --from-stats runs/demo-live" \
  --select "bin/distill export runs/demo --format verl --role reasoner,rubricator"
cd "$work"

echo "distill repair (eight bytes of the last shard flipped), then the same run again (docs/distill-repair.md):"
cp -a runs/demo damaged
last=$(jq -r '.shards[-1].file' damaged/manifest.json)
python3 -c 'import sys; p=sys.argv[1]; b=bytearray(open(p,"rb").read()); b[1000:1008]=bytes(x^0xff for x in b[1000:1008]); open(p,"wb").write(b)' "damaged/$last"
"$BIN/distill" repair damaged 2>/dev/null | sed -n 1p | sed "s|^damaged|runs/demo|" >repair.txt || true
"$BIN/distill" run --config "$root/examples/demo.yaml" --base-url "$url" --out damaged --quiet 2>/dev/null >>repair.txt || true
lines repair.txt '^(runs/demo: 1 damaged|  done )'
check "${got[@]}"
lines repair.txt '^requests:'
echo "  (printed) ${got[0]}   (from cache: may differ from the page by one)"

echo "four partitions and their merge (docs/scale-out.md; a fresh simulated endpoint: its faults depend on how often it saw a request):"
four_workers runs/big
"$BIN/distill" status runs/big/part-* >parts.txt 2>/dev/null || true
"$BIN/distill" merge runs/big/part-0 runs/big/part-1 runs/big/part-3 --out runs/big/all >>parts.txt 2>&1 || true
"$BIN/distill" merge runs/big/part-* --out runs/big/all 2>/dev/null >>parts.txt || true
"$BIN/distill" run --config "$root/examples/demo.yaml" --base-url "$url" --out runs/big/part-1 --partition 2/4 >>parts.txt 2>&1 || true
lines parts.txt '^(runs/big/part-|total|partitions:|distill merge:|  missing|run directory:|problems:|  done |requests:|distill run: the job differs|  partition:|use a new)'
check "${got[@]}"

echo "a budget for the whole job, split between four workers (docs/budgets.md; a fresh simulated endpoint):"
four_workers runs/budget --max-cost-usd 0.12 --budget-scope job
"$BIN/distill" status runs/budget/part-* 2>/dev/null >budget.txt || true
lines budget.txt '^budget:'
check "${got[@]}"

echo "distill plan, then the run and its status against the plan (docs/distill-plan.md; simllm -latency 200ms -limit-rpm 600 -limit-tpm 400000):"
start_sim "$work/plan.url" -problems "$root/examples/problems.jsonl" -latency 200ms -limit-rpm 600 -limit-tpm 400000
purl=$(head -n 1 "$work/plan.url")
(cd "$work" && "$BIN/distill" plan --config "$root/examples/demo.yaml" --base-url "$purl" --out runs/plan2 --sample 20 \
  --max-cost-usd 0.01 --quiet >plan2.txt 2>&1) || true
lines "$work/plan2.txt" '^distill plan: '
# what the pilot had finished and spent at the stop depends on the requests in flight then
check "${got[0]%%, after *}" "${got[0]#*tokens spent }"
plan_and_run docs/distill-plan.md "bin/distill plan --config examples/demo.yaml --base-url \$URL --out runs/plan --sample 20 --max-cost-usd 0.05 --quiet" \
  "$purl" examples/demo.yaml runs/plan

echo "distill plan of a grounded job (docs/distill-plan.md; simllm -latency 200ms -seed 1):"
start_sim "$work/gplan.url" -problems "$root/examples/problems.jsonl" -latency 200ms -seed 1
plan_and_run docs/distill-plan.md "bin/distill plan --config examples/demo-grounded.yaml" \
  "$(head -n 1 "$work/gplan.url")" examples/demo-grounded.yaml runs/plan-grounded

echo "batch mode (docs/batch-mode.md; simllm -problems examples/problems.jsonl -batch-turnaround 2s -seed 1):"
start_sim "$work/batch.url" -problems "$root/examples/problems.jsonl" -batch-turnaround 2s -seed 1
burl=$(head -n 1 "$work/batch.url")
"$BIN/distill" run --config "$root/examples/demo.yaml" --base-url "$burl" --out "$work/runs/batch" --batch --batch-poll 1s --quiet \
  >"$work/batch.txt" 2>/dev/null || true
lines "$work/batch.txt" '^(  done |requests:|batches:)'
check "${got[@]}"
# the provider's file and batch ids are new on every run: the columns before them
"$BIN/distill" batches list "$work/runs/batch" 2>/dev/null | awk 'NF >= 8 {print $1, $2, $3, $4, $5, $6, $7, $8} NF < 8' >"$work/batches.txt" || true
lines "$work/batches.txt" '.'
check "${got[@]}"
(cd "$work" && "$BIN/distill" run --config "$root/examples/demo.yaml" --base-url "$burl" --out runs/offline \
  --batch-files runs/offline-files >offline.txt 2>&1) || true
lines "$work/offline.txt" '^distill run: stopped'
check "${got[@]}"

echo "validate rejudge (simllm -seed 7 -invalid-rate 0.1 as the other judge; docs/validate-agreement.md):"
start_sim "$work/sim7.url" -seed 7 -invalid-rate 0.1
# Its default response cache is the user's ($XDG_CACHE_HOME/rubricforge): give it
# an empty one, or answers cached by earlier checks show as "from the cache".
cd "$root"
export XDG_CACHE_HOME="$work/xdg-cache"
blocks docs/validate-agreement.md --select "bin/validate rejudge runs/demo" --sub "\$URL=$(head -n 1 "$work/sim7.url")"
unset XDG_CACHE_HOME

echo "validate rejudge --panel and --order-check (simllm -seed 1 with profiled judges; docs/judge-reliability.md):"
start_sim "$work/judges.url" -seed 1 -judge small:false_valid=0.3,false_invalid=0.1 \
  -judge large:false_valid=0.05,false_invalid=0.02 -judge biased:false_valid=0.05,first_bias=0.6 \
  -judge noisy:flip=0.2 -judge late:late_lenience=0.5
export XDG_CACHE_HOME="$work/xdg-cache-judges"
blocks docs/judge-reliability.md --select "bin/validate rejudge runs/demo --panel" --select 'rejudge runs/demo --base-url $URL --model biased --order-check' \
  --sub "\$URL=$(head -n 1 "$work/judges.url")" --sub "examples/panel.yaml=$root/examples/panel.yaml"
unset XDG_CACHE_HOME

echo "a panel of two simulated judges: distill plan and run (docs/judge-panels.md), validate (docs/judge-reliability.md):"
start_sim "$work/panel.url" -judge judge-lenient:false_valid=0.3,first_bias=0.2 -judge judge-strict:false_invalid=0.1
blocks docs/judge-panels.md --select "bin/distill plan --config examples/demo-panel.yaml" --sub "\$URL=$(head -n 1 "$work/panel.url")" \
  --sub="--config examples/=--config $root/examples/" "${wall_masks[@]}"
"$BIN/distill" run --config "$root/examples/demo-panel.yaml" --base-url "$(head -n 1 "$work/panel.url")" --out "$work/runs/panel" --quiet >"$work/panel.txt" 2>/dev/null || true
lines "$work/panel.txt" '^(rubric items|empirically|requests:)'
check "${got[@]}"
blocks docs/judge-reliability.md --select "bin/validate runs/panel"

echo "make demo-grounded (README's tour; docs/grounded.md):"
demo_sim "$work/grounded.url"
rc=0
(cd "$work" && "$BIN/distill" run --config "$root/examples/demo-grounded.yaml" --base-url "$(head -n 1 grounded.url)" \
  --out runs/demo-grounded --quiet >grounded.txt 2>/dev/null) || rc=$?
[ "$rc" = 0 ] || [ "$rc" = 3 ] || { echo "readme-check: distill run (grounded) exit code $rc" >&2; exit 2; }
# the README shows distill status of the run, which speaks of the last session
"$BIN/distill" status "$work/runs/demo-grounded" >"$work/grounded-status.txt" 2>/dev/null || true
lines "$work/grounded-status.txt" '^(passages:|  done |grounded:|  requests by stage|  closed-book|criteria valid|requests:)'
check "${got[@]}"
blocks docs/grounded.md --select "bin/validate runs/demo-grounded"
echo "validate rejudge --order-check on the grounded demo (the profiled judges above; docs/judge-reliability.md):"
export XDG_CACHE_HOME="$work/xdg-cache-grounded"
blocks docs/judge-reliability.md --select "bin/validate rejudge runs/demo-grounded" --sub "\$URL=$(head -n 1 "$work/judges.url")"
echo "validate rejudge --judge-group on both demo corpora (the profiled judges above; docs/judge-reliability.md):"
blocks docs/judge-reliability.md --select "--judge-group 12 --seed 1" --sub "\$URL=$(head -n 1 "$work/judges.url")"
unset XDG_CACHE_HOME
blocks README.md --select "bin/distill export runs/demo-grounded --format verl --out exports/grounded-verl"
blocks docs/grounded.md --select "go run ./examples/trainers/exportrows exports/grounded-verl" \
  --sub "go run ./examples/trainers/exportrows=$work/exportrows"
start_rewardd "$work/rewardd-grounded.url" --corpus "$work/exports/grounded-verl" --judge-base-url "$sim" --judge-model simulated
g=$(head -n 1 "$work/rewardd-grounded.url")
blocks docs/grounded.md --sub "http://127.0.0.1:8711=$g" --select "8711/v1/score -d @-"
blocks README.md --sub "http://127.0.0.1:8701=$g" --select "rewardd --corpus exports/grounded-verl"

if [ "$differs" = 0 ]; then
  echo "readme-check: every line above is in README.md or docs/ as printed"
else
  echo "readme-check: some lines differ from README.md and docs/; update the blocks named"
fi
exit "$differs"
