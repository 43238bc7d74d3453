#!/usr/bin/env bash
# GRPO (group_norm) with OpenRLHF >= 0.10 on a `distill export --format verl` directory; no Python glue:
# OpenRLHF posts {query, prompts, labels} to rewardd's /get_reward, labels being the export's label column.
# Copy and adjust. First, in another shell:
#   bin/rewardd --corpus "$EXPORT" --judge-base-url http://127.0.0.1:8000/v1 --judge-model Qwen/Qwen3-32B --addr 127.0.0.1:8700
# OpenRLHF <= 0.9 spells the flags --prompt_data --input_key --label_key --apply_chat_template --remote_rm_url.
set -euo pipefail
EXPORT=${EXPORT:-exports/demo-verl}
MODEL=${MODEL:-Qwen/Qwen3-4B}
REWARDD=${REWARDD:-http://127.0.0.1:8700}

python3 -m openrlhf.cli.train_ppo_ray \
  --actor.model_name_or_path "$MODEL" \
  --data.prompt_dataset "$EXPORT" \
  --data.input_key prompt \
  --data.apply_chat_template \
  --data.label_key label \
  --reward.remote_url "$REWARDD/get_reward" \
  --algo.advantage.estimator group_norm \
  --rollout.n_samples_per_prompt 8 \
  --rollout.batch_size 128 \
  --rollout.max_new_tokens 4096 \
  --train.batch_size 128 \
  --actor.num_nodes 1 \
  --actor.num_gpus_per_node 8 \
  --vllm.num_engines 4 \
  --vllm.tensor_parallel_size 2 \
  "$@"
