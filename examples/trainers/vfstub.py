"""A stand-in for the verifiers library's rubric loop, for the tests: verifiers is not installable on the
machines this project tests on (no PyPI). It does what verifiers' Rubric does with reward functions: each
function gets only the arguments its signature names (prompt, completion, answer, state, task, info) or all
of them with **kwargs, a coroutine is awaited, the functions of one rollout share its state, the reward is
the weighted sum, and a negative weight is refused (verifiers requires non-negative weights)."""

import asyncio
import inspect

ARGS = ("prompt", "completion", "answer", "state", "task", "info")


class Rubric:
    def __init__(self, funcs, weights):
        if len(funcs) != len(weights) or any(w < 0 for w in weights):
            raise ValueError("weights must be one non-negative number per function: %r" % (weights,))
        self.funcs, self.weights = list(funcs), list(weights)

    async def _call(self, func, rollout):
        params = inspect.signature(func).parameters
        if any(p.kind == p.VAR_KEYWORD for p in params.values()):
            args = dict(rollout)
        else:
            args = {k: v for k, v in rollout.items() if k in params}
        out = func(**args)
        return float(await out if inspect.isawaitable(out) else out)

    async def score_rollout(self, prompt, completion, answer, state, task="default", info=None):
        rollout = {"prompt": prompt, "completion": completion, "answer": answer, "state": state, "task": task, "info": info or {}}
        values = await asyncio.gather(*(self._call(f, rollout) for f in self.funcs))
        metrics = {f.__name__: v for f, v in zip(self.funcs, values)}
        return sum(w * v for w, v in zip(self.weights, values)), metrics


class SingleTurnEnv:
    """One policy turn per row: the prompt is the row's prompt messages, or its question as a user message."""

    def __init__(self, dataset, rubric, **kwargs):
        self.dataset, self.rubric = list(dataset), rubric

    def run(self, policy, truncated=lambda row: False):
        """Rolls out every row with policy(prompt messages, row) -> completion text; returns (reward, metrics,
        state) per row. state["is_truncated"] is truncated(row), as verifiers sets it when a model response
        ended at the token limit."""

        async def one(row):
            prompt = row.get("prompt") or [{"role": "user", "content": row["question"]}]
            completion = [{"role": "assistant", "content": policy(prompt, row)}]
            state = {"is_truncated": truncated(row)}
            reward, metrics = await self.rubric.score_rollout(prompt, completion, row.get("answer"), state,
                                                              row.get("task", "default"), row.get("info"))
            return reward, metrics, state

        async def run_all():
            return await asyncio.gather(*(one(r) for r in self.dataset))

        return asyncio.run(run_all())
