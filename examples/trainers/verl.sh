#!/usr/bin/env bash
# GRPO with verl on a `distill export --format verl` directory, rewards from rewardd through rubric_reward.py.
# Copy and adjust. First, in another shell (the judge is any OpenAI-compatible endpoint):
#   bin/rewardd --corpus "$EXPORT" --judge-base-url http://127.0.0.1:8000/v1 --judge-model Qwen/Qwen3-32B --addr 127.0.0.1:8700
# verl wants file lists, not a directory; the batch reward manager (legacy path) sends one request per batch:
#   reward_model.use_reward_loop=False reward_model.reward_manager=batch
set -euo pipefail
EXPORT=${EXPORT:-exports/demo-verl}
MODEL=${MODEL:-Qwen/Qwen3-4B}
REWARDD=${REWARDD:-http://127.0.0.1:8700}
SHIM=$(cd "$(dirname "$0")" && pwd)/rubric_reward.py

files() { # verl's list syntax for one split's files: ['a','b']
  local out="" f
  for f in "$EXPORT"/data/"$1"-*.parquet; do [ -e "$f" ] && out+="${out:+,}'$f'"; done
  echo "[$out]"
}
VAL=$(files validation); [ "$VAL" = "[]" ] && VAL=$(files train)

python3 -m verl.trainer.main_ppo \
  algorithm.adv_estimator=grpo \
  data.train_files="$(files train)" \
  data.val_files="$VAL" \
  data.prompt_key=prompt \
  data.max_prompt_length=1024 \
  data.max_response_length=4096 \
  data.train_batch_size=128 \
  actor_rollout_ref.model.path="$MODEL" \
  actor_rollout_ref.rollout.name=vllm \
  actor_rollout_ref.rollout.n=8 \
  custom_reward_function.path="$SHIM" \
  custom_reward_function.name=compute_score \
  +custom_reward_function.reward_kwargs.scorer_url="$REWARDD" \
  trainer.n_gpus_per_node=8 \
  trainer.nnodes=1 \
  "$@"
