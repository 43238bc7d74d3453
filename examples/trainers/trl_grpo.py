"""GRPO with TRL on a `distill export --format verl` directory, rewards from rewardd through rubric_reward.py.

Copy and adjust. First, in another shell:
    bin/rewardd --corpus EXPORT --judge-base-url http://127.0.0.1:8000/v1 --judge-model Qwen/Qwen3-32B --addr 127.0.0.1:8700
Then:
    RUBRIC_REWARD_URL=http://127.0.0.1:8700 python3 examples/trainers/trl_grpo.py exports/demo-verl Qwen/Qwen3-4B

load_dataset reads the export's card (README.md configs) and finds the splits; every column (label, extra_info,
solution, ...) reaches the reward function as a keyword argument. The solution column also lets TRL's built-in
accuracy_reward run next to the rubric reward.
"""

import os
import sys

from datasets import load_dataset
from trl import GRPOConfig, GRPOTrainer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rubric_reward import rubric_reward  # noqa: E402


def main():
    export = sys.argv[1] if len(sys.argv) > 1 else "exports/demo-verl"
    model = sys.argv[2] if len(sys.argv) > 2 else "Qwen/Qwen3-4B"
    ds = load_dataset(export)
    args = GRPOConfig(
        output_dir="runs/trl-grpo",
        num_generations=8,
        per_device_train_batch_size=8,
        max_completion_length=4096,
        learning_rate=1e-6,
        logging_steps=1,
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[rubric_reward],
        args=args,
        train_dataset=ds["train"],
        eval_dataset=ds["validation"] if "validation" in ds else None,
    )
    trainer.train()


if __name__ == "__main__":
    main()
