"""A verifiers environment over a rubricforge export, graded per row by rewardd (prime-rl, vf-eval).

Copy and adjust. First, in another shell, rewardd on the same export (its corpus finds a row's rubric by id
when the row's own cannot be used):

    bin/rewardd --corpus exports/demo-verl --judge-base-url http://127.0.0.1:8000/v1 --judge-model Qwen/Qwen3-32B

Then, with verifiers and datasets installed, e.g. in prime-rl's orchestrator config:

    [environment]
    id = "rubricforge-env"                # this file, installed as a package (vf-init/prime env) or on sys.path
    args = { export = "exports/demo-verl", split = "train", scorer_url = "http://127.0.0.1:8700" }

or `vf-eval rubricforge-env -a '{"export": "exports/demo-verl"}'`. A verl export gives the prompt the policy
was sampled with (its step headers and answer tag); a rar export gives the question alone.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verifiers_rubric import rewardd_rubric, rows_for_verifiers  # noqa: E402


def load_environment(export="exports/demo-verl", split="train", scorer_url=None, reward_key="reward", **kwargs):
    """The environment: the export's split as the dataset, one rollout graded by its row's rubric."""
    import verifiers as vf
    from datasets import Dataset, load_dataset

    rows = load_dataset(export, split=split)
    dataset = Dataset.from_list(rows_for_verifiers(rows))
    settings = {"scorer_url": scorer_url} if scorer_url else {}
    return vf.SingleTurnEnv(dataset=dataset, rubric=rewardd_rubric(vf, reward_key, **settings), **kwargs)
