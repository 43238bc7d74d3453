"""A per-row rubric judge for verifiers environments (prime-rl), graded by rewardd. Standard library only.

verifiers' built-in JudgeRubric grades every row of an environment by one judge prompt fixed when the
environment is built. A rubricforge corpus has a rubric per row, so this module grades each rollout by the
rubric its dataset row carries, through rewardd (POST /v1/score, the path every other trainer takes):

    import verifiers as vf
    from verifiers_rubric import rewardd_rubric, rows_for_verifiers

    dataset = Dataset.from_list(rows_for_verifiers(verl_rows))     # or rar rows
    env = vf.SingleTurnEnv(dataset=dataset, rubric=rewardd_rubric(vf))

examples/trainers/rubricforge_env.py is such an environment (load_environment for `vf-eval`/prime-rl).

The row: `prompt` (chat messages) or `question`, `answer` (the ground truth) and `info`, a dict holding the
rubric: a verl export row's extra_info as it is (its rubric, id, question, scheme, and a grounded question's
passage), or a rar export row's fields (id, question, reference_answer and rubric as {title, description,
weight}). rows_for_verifiers turns export rows into such rows.

Weights. verifiers combines a rubric's reward functions by weights fixed for the environment, not per row,
and they must not be negative. So the row's items never become verifiers weights: the rubric has one reward
function, rubricforge_reward, with weight 1.0, whose value is rewardd's reward for the row's whole rubric,
and zero-weight functions that only log (judge_ok, correct, and the components accuracy, format, suggest,
pitfall, bonus). Inside the row's rubric an item's weight is a magnitude and its sign a polarity, as in
rewardd's labels: a PITFALL item always counts against the response when satisfied (polarity -1), and a
rar row's negative weight w is sent as weight |w| with polarity -1 (so a negative-weight FACTUAL or PROCESS
criterion costs |w| when met, as the rar format means it). rewardd's SRaR reward can be below 0 (a PITFALL
committed); reward_key="score" gives its [0, 1] normalization instead, for trainers that need a
non-negative reward.

A rollout verifiers marks truncated (state["is_truncated"], set when a model response ended at the token limit)
is sent with finish_reason "length": rewardd takes no answer from it (docs/rewardd.md, finish reasons).

Settings as in rubric_reward.py: scorer_url / RUBRIC_REWARD_URL, timeout, retries, scheme, token_env /
RUBRIC_REWARD_TOKEN. A rollout rewardd could not score (no rubric, a bad row) gets reward 0 and scored 0 in
the metrics, and the reason in state["rubricforge"]["error"].
"""

import asyncio
import json
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rubric_reward as rr  # noqa: E402

METRICS = ("judge_ok", "correct", "scored") + rr.COMPONENTS
STATE_KEY = "rubricforge"  # where a rollout's rewardd result is kept in verifiers' state


def rar_label(row):
    """The reward spec of a rar export row: items typed by their title, weights as magnitudes, the sign of
    a weight as the item's polarity (a PITFALL item is -1 whatever its sign)."""
    items = row.get("rubric")
    if isinstance(items, str):
        items = json.loads(items)
    if not items:
        return None
    rubric, style = [], "srar"
    for i, it in enumerate(items):
        typ = rr._text(it.get("title")).strip().upper()
        weight = rr._number(it.get("weight"))
        if typ in ("FACTUAL", "PROCESS"):
            style = "factual_process"
        polarity = -1 if typ == "PITFALL" or weight < 0 else 1
        rubric.append({"id": i + 1, "type": typ, "text": rr._text(it.get("description")), "weight": abs(weight), "polarity": polarity})
    return {"v": "3", "id": rr._text(row.get("id")), "style": style, "question": rr._text(row.get("question")),
            "ground_truth": rr._text(row.get("reference_answer")), "rubric": rubric}


def _is_rar(info):
    items = info.get("rubric")
    if isinstance(items, str):
        try:
            items = json.loads(items)
        except ValueError:
            return False
    return isinstance(items, list) and bool(items) and isinstance(items[0], dict) and "title" in items[0]


def rows_for_verifiers(rows):
    """verifiers dataset rows (prompt or question, answer, info, task) from verl or rar export rows."""
    out = []
    for row in rows:
        if "extra_info" in row:  # verl: the prompt is the export's, the rubric rides in extra_info
            info = dict(row.get("extra_info") or {})
            answer = (row.get("reward_model") or {}).get("ground_truth") or info.get("answer") or ""
            out.append({"prompt": row.get("prompt"), "answer": rr._text(answer), "info": info, "task": "rubricforge"})
        else:  # rar: the question alone
            info = {k: row.get(k) for k in ("id", "question", "reference_answer", "rubric", "question_source")}
            out.append({"question": rr._text(row.get("question")), "answer": rr._text(row.get("reference_answer")),
                        "info": info, "task": "rubricforge"})
    return out


def _item(completion, answer, info, prompt):
    info = info if isinstance(info, dict) else {}
    label = rar_label(info) if _is_rar(info) else None
    item = rr._item(0, rr._completion_text(completion), label=label, extra_info=info,
                    ground_truth=answer if answer not in (None, "") else None, prompt=rr._completion_text(prompt) if prompt else None)
    return item


def score_rollout(completion, answer=None, info=None, prompt=None, state=None, **settings):
    """rewardd's result for one rollout (a /v1/score result dict), kept in state so the metric functions of
    the same rollout do not ask again. verifiers runs a rollout's functions at the same time, each in a
    thread: the first to come asks rewardd and the others wait for its answer (one request per rollout
    however slowly rewardd answers). A rollout verifiers marks truncated (state["is_truncated"]: a model
    response that ended at the token limit, or a prompt over the context) is sent with finish_reason
    "length", so that rewardd takes no answer from it."""
    if not isinstance(state, dict):
        return _ask(completion, answer, info, prompt, state, settings)
    while True:
        with _asking_lock:
            if isinstance(state.get(STATE_KEY), dict):
                return state[STATE_KEY]
            asked = _asking.get(id(state))
            if asked is None:
                asked = _asking[id(state)] = threading.Event()
                break
        asked.wait()  # then the answer is in state, or that call failed and this one asks
    try:
        res = _ask(completion, answer, info, prompt, state, settings)
        state[STATE_KEY] = res
        return res
    finally:
        with _asking_lock:
            del _asking[id(state)]
        asked.set()


# The rollouts whose request to rewardd is under way, by id(state): an entry lives only while its state is
# held by the call asking (so an id is not reused meanwhile).
_asking = {}
_asking_lock = threading.Lock()


def _ask(completion, answer, info, prompt, state, settings):
    cfg = rr._Config(settings)
    item = _item(completion, answer, info, prompt)
    if isinstance(state, dict) and state.get("is_truncated") is True:
        item["finish_reason"] = "length"
    return rr._score(cfg, [item])[0]


def _value(res, key):
    if key == "reward" or key == "score":
        return 0.0 if res.get("error") else rr._number(res.get(key))
    if key == "scored":
        return 0.0 if res.get("error") else 1.0
    if key in rr.COMPONENTS:
        return rr._number((res.get("components") or {}).get(key))
    return rr._number(res.get(key))


def reward_funcs(reward_key="reward", **settings):
    """The reward functions and their weights: rubricforge_reward (weight 1.0) and the metrics (0.0)."""
    if reward_key not in ("reward", "score"):
        raise ValueError("reward_key %r: 'reward' (rewardd's reward) or 'score' (its [0, 1] normalization)" % reward_key)

    async def rubricforge_reward(completion, answer=None, info=None, prompt=None, state=None, **kwargs):
        res = await asyncio.to_thread(score_rollout, completion, answer, info, prompt, state, **settings)
        return _value(res, reward_key)

    funcs, weights = [rubricforge_reward], [1.0]
    for name in METRICS:
        funcs.append(_metric(name, settings))
        weights.append(0.0)
    return funcs, weights


def _metric(name, settings):
    async def metric(completion, answer=None, info=None, prompt=None, state=None, **kwargs):
        res = await asyncio.to_thread(score_rollout, completion, answer, info, prompt, state, **settings)
        return _value(res, name)

    metric.__name__ = "rubricforge_" + name
    return metric


def rewardd_rubric(vf, reward_key="reward", **settings):
    """A verifiers Rubric grading by the row's rubric through rewardd (vf: the imported verifiers module)."""
    funcs, weights = reward_funcs(reward_key, **settings)
    return vf.Rubric(funcs=funcs, weights=weights)
