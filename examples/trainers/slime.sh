#!/usr/bin/env bash
# GRPO with slime on a `distill export --format verl` file; no Python glue: slime posts {prompt, response, label}
# to rewardd's /score and takes the "reward" key of the answer. slime reads one file per --prompt-data, so export
# the split into one: distill export RUN --format verl --out "$EXPORT" --rows-per-file 1000000
# Copy and adjust, and add your model's Megatron arguments (see slime's scripts/models/*.sh). First, in another shell:
#   bin/rewardd --corpus "$EXPORT" --judge-base-url http://127.0.0.1:8000/v1 --judge-model Qwen/Qwen3-32B --addr 127.0.0.1:8700
set -euo pipefail
EXPORT=${EXPORT:-exports/demo-verl}
REWARDD=${REWARDD:-http://127.0.0.1:8700}

python3 train.py \
  --prompt-data "$EXPORT/data/train-00000-of-00001.parquet" \
  --input-key prompt \
  --label-key label \
  --apply-chat-template \
  --rollout-shuffle \
  --rm-type remote_rm \
  --rm-url "$REWARDD/score" \
  --reward-key reward \
  --advantage-estimator grpo \
  --n-samples-per-prompt 8 \
  --rollout-batch-size 32 \
  --rollout-max-response-len 4096 \
  --global-batch-size 256 \
  "$@"
