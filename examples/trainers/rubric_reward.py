"""Rubric rewards from rewardd, for verl and TRL. Standard library only.

rewardd (cmd/rewardd) scores a response against a problem's rubric; this file
is the few lines of glue that verl and TRL need to call it, because both load
reward code by Python import. It POSTs to rewardd's /v1/score with the rubric
taken from the row (the verl export's extra_info, or its label column), so
rewardd needs no corpus lookup; a grounded question's row (scheme grounded)
sends its passage and criteria the same way. The problem id goes along, so
a rewardd with the corpus scores the row even when its label cannot be used.

verl (custom_reward_function.path; the plain and the batch reward managers):

    custom_reward_function.path=examples/trainers/rubric_reward.py
    custom_reward_function.name=compute_score
    +custom_reward_function.reward_kwargs.scorer_url=http://127.0.0.1:8700

    compute_score returns a dict with the same scalar keys for every sample
    (verl turns them into reward_extra_info columns): score (the reward),
    judge_ok, correct, scored (0 when rewardd could not score the item),
    n_items, satisfied and the reward components accuracy, format, suggest,
    pitfall, bonus (0 when a scheme has no such component).

TRL (GRPOTrainer reward_funcs=[rubric_reward]; the dataset's columns arrive
as keyword arguments):

    rubric_reward(prompts, completions, **kwargs) -> list of float or None
    (None for an item rewardd could not score: TRL's "not applicable").

Settings, as keyword arguments (verl reward_kwargs) or environment variables
(the only way for TRL): scorer_url / RUBRIC_REWARD_URL (default
http://127.0.0.1:8700), timeout / RUBRIC_REWARD_TIMEOUT (seconds per
request, default 120), retries / RUBRIC_REWARD_RETRIES (default 5; with
exponential backoff and jitter, for refused and reset connections, timeouts,
408, 429 and 5xx; when it gives up it says the last cause), scheme /
RUBRIC_REWARD_SCHEME (default: the row's). Requests hold at most 256 items
and 8 MiB; a request rewardd answers 413 (over its --max-body) is halved
until it fits. When rewardd runs
with --token-env, put the token in RUBRIC_REWARD_TOKEN (token_env names
another variable); it is sent as a bearer token and never printed.

The row's extra_info is only read, never modified (verl may share one dict
between the rollouts of a prompt). HF datasets gives every struct field, so
absent values arrive as None; they are treated as absent.
"""

import asyncio
import http.client
import json
import os
import random
import time
import urllib.error
import urllib.request

DEFAULT_URL = "http://127.0.0.1:8700"
DEFAULT_TIMEOUT = 120.0
DEFAULT_RETRIES = 5
BATCH_ITEMS = 256  # items per /v1/score request, at most
BATCH_BYTES = 8 << 20  # bytes per /v1/score request, at most (rewardd's --max-body is 64 MiB by default)
RETRY_STATUS = (408, 425, 429, 500, 502, 503, 504)
BACKOFF_BASE, BACKOFF_MAX = 0.5, 8.0

COMPONENTS = ("accuracy", "format", "suggest", "pitfall", "bonus")
VERL_KEYS = ("score", "judge_ok", "correct", "scored", "n_items", "satisfied") + COMPONENTS

# Seams for the tests: the HTTP call and the sleep between attempts.
_urlopen = urllib.request.urlopen
_sleep = time.sleep


class RewardError(RuntimeError):
    """rewardd could not be reached, or refused the request."""


class _TooLarge(RewardError):
    """rewardd answered 413: the request body is over its --max-body."""


class _Config:
    def __init__(self, kwargs):
        self.url = (kwargs.get("scorer_url") or os.environ.get("RUBRIC_REWARD_URL") or DEFAULT_URL).rstrip("/")
        self.timeout = float(kwargs.get("timeout") or os.environ.get("RUBRIC_REWARD_TIMEOUT") or DEFAULT_TIMEOUT)
        retries = kwargs.get("retries")
        if retries is None:
            retries = os.environ.get("RUBRIC_REWARD_RETRIES", DEFAULT_RETRIES)
        self.retries = max(0, int(retries))
        self.scheme = kwargs.get("scheme") or os.environ.get("RUBRIC_REWARD_SCHEME") or None
        self.token = os.environ.get(kwargs.get("token_env") or "RUBRIC_REWARD_TOKEN") or None


def _backoff(attempt):
    return min(BACKOFF_MAX, BACKOFF_BASE * 2**attempt) * (0.5 + random.random() / 2)


def _post(cfg, path, body):
    """POSTs body as JSON and returns the decoded answer, retrying what may pass."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode("utf-8")
    headers = {"Content-Type": "application/json"}
    if cfg.token:
        headers["Authorization"] = "Bearer " + cfg.token
    last = None
    for attempt in range(cfg.retries + 1):
        if attempt:
            _sleep(_backoff(attempt - 1))
        req = urllib.request.Request(cfg.url + path, data=data, headers=headers, method="POST")
        try:
            with _urlopen(req, timeout=cfg.timeout) as resp:
                return json.loads(resp.read().decode("utf-8"))
        except urllib.error.HTTPError as e:
            reason = _error_text(e)
            if e.code == 413:
                raise _TooLarge("rewardd at %s refused a request of %d bytes as too large (413): %s" % (cfg.url, len(data), reason)) from None
            if e.code not in RETRY_STATUS:
                raise RewardError("rewardd at %s refused the request (%d): %s" % (cfg.url, e.code, reason)) from None
            last = "%d %s" % (e.code, reason)
        except urllib.error.URLError as e:  # refused, unknown host, ...: the cause is in e.reason
            last = _cause(e.reason)
        except (OSError, http.client.HTTPException, ValueError) as e:  # reset, timeout, cut short, bad JSON
            last = _cause(e)
    raise RewardError("rewardd at %s did not answer after %d attempts: %s" % (cfg.url, cfg.retries + 1, last))


def _cause(err):
    """The cause of a failed attempt in words, with what to check for a refused connection."""
    text = "%s: %s" % (type(err).__name__, err) if not isinstance(err, str) else err
    if isinstance(err, ConnectionRefusedError):
        text += " (is rewardd running at that address? it prints its URL as its first line)"
    return text


def _error_text(err):
    try:
        body = json.loads(err.read().decode("utf-8"))
        return str(body.get("error") or body)
    except Exception:
        return err.reason or "no reason given"


def _chunks(items):
    """Splits items into requests of at most BATCH_ITEMS items and BATCH_BYTES bytes (an item larger than
    that alone goes in a request of its own)."""
    chunk, size = [], 0
    for item in items:
        n = len(json.dumps(item).encode("utf-8")) + 2
        if chunk and (len(chunk) >= BATCH_ITEMS or size + n > BATCH_BYTES - 64):
            yield chunk
            chunk, size = [], 0
        chunk.append(item)
        size += n
    if chunk:
        yield chunk


def _score_chunk(cfg, chunk):
    """Scores one chunk; a chunk rewardd finds too large (413) is halved until it fits."""
    body = {"items": chunk}
    if cfg.scheme:
        body["scheme"] = cfg.scheme
    try:
        answer = _post(cfg, "/v1/score", body)
    except _TooLarge as e:
        if len(chunk) == 1:
            raise RewardError("%s; one item alone is too large: raise rewardd's --max-body" % e) from None
        half = len(chunk) // 2
        return _score_chunk(cfg, chunk[:half]) + _score_chunk(cfg, chunk[half:])
    got = answer.get("results") if isinstance(answer, dict) else None
    if not isinstance(got, list) or len(got) != len(chunk):
        raise RewardError("rewardd at %s answered %d results for %d items" % (cfg.url, len(got or []), len(chunk)))
    return [r if isinstance(r, dict) else {"error": "not a result object"} for r in got]


def _score(cfg, items):
    """Scores items (dicts of the /v1/score request) in bounded requests; one result per item, in order."""
    results = []
    for chunk in _chunks(items):
        results.extend(_score_chunk(cfg, chunk))
    return results


def _text(v):
    return "" if v is None else str(v)


GROUNDED = "grounded"


def _label_from_extra_info(extra_info, ground_truth):
    """The reward spec rebuilt from a verl row's extra_info; None without a rubric (rewardd then finds the
    problem by its id). A grounded question's row holds its criteria in rubric and its passage beside them:
    its label carries both in grounded, with an empty rubric, as distill export's label column does."""
    rubric = extra_info.get("rubric")
    if isinstance(rubric, str):
        rubric = json.loads(rubric) if rubric.strip() else None
    if not rubric:
        return None
    answer = ground_truth if ground_truth is not None else extra_info.get("answer")
    label = {
        "v": _text(extra_info.get("spec_version")),
        "id": _text(extra_info.get("id")),
        "scheme": _text(extra_info.get("scheme")),
        "question": _text(extra_info.get("question")),
        "ground_truth": _text(answer),
        "rubric": rubric,
    }
    if extra_info.get("scheme") != GROUNDED and not extra_info.get("passage"):
        return label
    passage = _text(extra_info.get("passage"))
    if not passage.strip():
        return None  # the judge's answer key is not in the row: rewardd takes the question from its corpus
    grounded = {"passage": passage, "criteria": rubric}
    record, sep, k = label["id"].rpartition("-q")
    if sep and record and k.isdigit():  # a question's id is its record's id + "-q" + its index
        grounded = {"record_id": record, "index": int(k), **grounded}
    label.update(scheme=GROUNDED, style=GROUNDED, ground_truth="", rubric=[], grounded=grounded)
    return label


def _item(index, response, label=None, extra_info=None, ground_truth=None, prompt=None):
    """One /v1/score item: the rubric travels as the label; without one, rewardd looks the problem up."""
    item = {"request_id": str(index), "response": _text(response)}
    info = extra_info if isinstance(extra_info, dict) else {}
    if label is None or (isinstance(label, str) and not label.strip()):
        label = _label_from_extra_info(info, ground_truth)
    if label is not None:
        item["label"] = label
    if info.get("id") is not None:
        item["problem_id"] = _text(info["id"])
    if label is None:
        if info.get("question") is not None:
            item["question"] = _text(info["question"])
        elif prompt is not None:
            item["prompt"] = prompt
    return item


def _number(v):
    if isinstance(v, bool):
        return 1.0 if v else 0.0
    try:
        return float(v)
    except (TypeError, ValueError):
        return 0.0


def _verl_result(res):
    """The dict verl gets: the same scalar keys for every sample."""
    failed = bool(res.get("error"))
    components = res.get("components") or {}
    metrics = res.get("metrics") or {}
    out = {
        "score": 0.0 if failed else _number(res.get("reward")),
        "judge_ok": _number(res.get("judge_ok")),
        "correct": _number(res.get("correct")),
        "scored": 0.0 if failed else 1.0,
        "n_items": _number(metrics.get("n_items")),
        "satisfied": _number(metrics.get("satisfied")),
    }
    for name in COMPONENTS:
        out[name] = _number(components.get(name))
    return out


def _is_batch(v):
    return v is not None and not isinstance(v, (str, bytes)) and hasattr(v, "__len__")


def _at(seq, i):
    return None if seq is None else seq[i]


def compute_score(
    data_source=None,
    solution_str=None,
    ground_truth=None,
    extra_info=None,
    *,
    data_sources=None,
    solution_strs=None,
    ground_truths=None,
    extra_infos=None,
    **kwargs,
):
    """verl's reward function, plain or batch.

    Plain: compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs) -> dict.
    Batch: compute_score(data_sources=..., solution_strs=..., ground_truths=..., extra_infos=..., **kwargs)
    (or the same positionally) -> list of dicts, one per solution, in order.
    """
    cfg = _Config(kwargs)
    if solution_strs is None and _is_batch(solution_str):
        solution_strs, ground_truths, extra_infos = solution_str, ground_truth, extra_info
    if solution_strs is not None:
        items = [
            _item(i, solution_strs[i], extra_info=_at(extra_infos, i), ground_truth=_at(ground_truths, i))
            for i in range(len(solution_strs))
        ]
        return [_verl_result(r) for r in _score(cfg, items)]
    item = _item(0, solution_str, extra_info=extra_info, ground_truth=ground_truth)
    return _verl_result(_score(cfg, [item])[0])


async def compute_score_async(*args, **kwargs):
    """compute_score for verl's async reward loop; the HTTP call runs in a thread."""
    return await asyncio.to_thread(compute_score, *args, **kwargs)


def _completion_text(completion):
    """TRL gives a string, or for chat data a list of messages; the last message is the answer."""
    if isinstance(completion, (list, tuple)):
        if not completion:
            return ""
        last = completion[-1]
        return _text(last.get("content") if isinstance(last, dict) else last)
    return _text(completion)


def rubric_reward(prompts, completions, **kwargs):
    """TRL's reward function: one float per completion, None where rewardd could not score it."""
    cfg = _Config(kwargs)
    labels = kwargs.get("label")
    extra_infos = kwargs.get("extra_info")
    solutions = kwargs.get("solution")
    items = [
        _item(
            i,
            _completion_text(completions[i]),
            label=_at(labels, i),
            extra_info=_at(extra_infos, i),
            ground_truth=_at(solutions, i),
            prompt=_at(prompts, i),
        )
        for i in range(len(completions))
    ]
    results = _score(cfg, items)
    rewards = [None if r.get("error") else _number(r.get("reward")) for r in results]
    log_metric = kwargs.get("log_metric")
    if callable(log_metric) and results:
        log_metric("rubric/judge_ok", sum(_number(r.get("judge_ok")) for r in results) / len(results))
        log_metric("rubric/scored", sum(0.0 if r.get("error") else 1.0 for r in results) / len(results))
    return rewards
